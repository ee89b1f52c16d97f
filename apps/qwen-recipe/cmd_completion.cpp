// qwen-recipe completion bash: a bash completion script for subcommands, their options, recipe
// names and MODEL@GPU[xN][:PRECISION] specs, GPUs, precisions, Megatron-Core profiles and pass
// names.
// The subcommands and options are read from the CLI definition itself, the names from the
// registries, so the script is as current as the binary that writes it.
#include "commands.h"
#include "passes/registry.h"

#include <memory>
#include <set>

namespace qr::cli {
namespace {

std::string words(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items)
    out += (out.empty() ? "" : " ") + s;
  return out;
}

std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& s : o->get_snames())
      out.push_back("-" + s);
    for (const std::string& l : o->get_lnames())
      out.push_back("--" + l);
  }
  return out;
}

int run_completion(CLI::App& app, const GlobalOptions& g) {
  auto compiler = make_compiler(g);
  const Catalog& cat = compiler->catalog();
  std::vector<std::string> models, gpus, specs, passes, profiles;
  for (const ModelInfo& m : cat.models()) {
    models.push_back(m.name);
    models.insert(models.end(), m.names.begin(), m.names.end());
  }
  for (const GpuInfo& gpu : cat.gpus())
    gpus.push_back(gpu.name);
  for (const RecipeEntry& r : cat.recipes()) {
    specs.push_back(r.key());
    for (const auto& [precision, variant] : r.precisions)
      specs.push_back(r.key() + ":" + precision);
  }
  passes = registered_names();
  for (const ProfileSpec& p : compiler->schema().profiles())
    profiles.push_back(p.name);

  std::string cases;
  std::vector<std::string> subcommands;
  for (const CLI::App* sub : app.get_subcommands({})) {
    subcommands.push_back(sub->get_name());
    cases += "    " + sub->get_name() + ") opts=\"" + words(option_names(*sub)) + "\" ;;\n";
  }
  std::string out = R"(# bash completion for qwen-recipe (written by `qwen-recipe completion bash`).
# Use: source <(qwen-recipe completion bash), or save it under /etc/bash_completion.d/.
#
# Words are split at blanks only, from COMP_LINE: COMP_WORDS also splits at COMP_WORDBREAKS
# ('@', ':', '=' ...), which would cut recipe specs (MODEL@GPU:PRECISION), --opt=value and
# pipeline text (precision{p=bf16},...). The replies are then trimmed to the part after the last
# word break, the part bash replaces (as bash-completion's __ltrim_colon_completions does for ':').
_qwen_recipe() {
  local line=${COMP_LINE:0:COMP_POINT} words=() eq="" k
  read -ra words <<< "$line"
  [[ -z $line || $line == *[[:blank:]] ]] && words+=("")
  local cword=$((${#words[@]} - 1))
  local cur=${words[cword]} prev=""
  ((cword > 0)) && prev=${words[cword-1]}
  if [[ $cur == --*=* ]]; then
    prev=${cur%%=*}
    eq=$prev=
    cur=${cur#*=}
  fi
  # In an open quote bash completes the text after the quote, word breaks and all.
  local quoted=""
  if [[ $cur == [\"\']* ]]; then
    quoted=1
    cur=${cur:1}
  fi
  COMPREPLY=()
  _qwen_recipe_replies
  [[ -n $quoted ]] && return
  if [[ -n $eq ]]; then
    for k in "${!COMPREPLY[@]}"; do COMPREPLY[k]=$eq${COMPREPLY[k]}; done
  fi
  local breaks=${COMP_WORDBREAKS-} word=$eq$cur
  if [[ -n $breaks ]]; then
    local keep=${word##*[$breaks]}
    local drop=${word%"$keep"}
    # '@' and '$' break words but stay in the part bash replaces (readline's special prefixes).
    [[ $drop == *[@\$] ]] && drop=${drop%?}
    if [[ -n $drop ]]; then
      for k in "${!COMPREPLY[@]}"; do COMPREPLY[k]=${COMPREPLY[k]#"$drop"}; done
    fi
  fi
}
# Sets COMPREPLY for cur (the whole word), prev, words and cword of _qwen_recipe.
_qwen_recipe_replies() {
  local subcommands=")" +
                    words(subcommands) +
                    R"("
  local models=")" + words(models) +
                    R"("
  local specs=")" + words(specs) +
                    R"("
  local gpus=")" + words(gpus) +
                    R"("
  local precisions=")" +
                    words(cat.precisions()) +
                    R"("
  local profiles=")" +
                    words(profiles) +
                    R"("
  local passes=")" + words(passes) +
                    R"("
  local sub="" i
  for ((i = 1; i < cword; i++)); do
    case ${words[i]} in
      --recipes-dir) ((i++)) ;;
      -*) ;;
      *) sub=${words[i]}; break ;;
    esac
  done
  if [[ -z $sub ]]; then
    COMPREPLY=($(compgen -W "$subcommands )" +
                    words(option_names(app)) + R"(" -- "$cur"))
    return
  fi
  case $prev in
    --gpu) COMPREPLY=($(compgen -W "$gpus" -- "$cur")); return ;;
    --precision) COMPREPLY=($(compgen -W "$precisions" -- "$cur")); return ;;
    --mcore) COMPREPLY=($(compgen -W "$profiles" -- "$cur")); return ;;
    --format)
      if [[ $sub == validate ]]; then
        COMPREPLY=($(compgen -W "text json" -- "$cur"))
      else
        COMPREPLY=($(compgen -W "slurm torchrun json" -- "$cur"))
      fi
      return ;;
    --pipeline)
      local done=""
      [[ $cur == *,* ]] && done=${cur%,*},
      COMPREPLY=($(compgen -P "$done" -W "$passes" -- "${cur##*,}"))
      compopt -o nospace 2>/dev/null
      return ;;
    -o|--output)
      if [[ $sub == diff ]]; then
        COMPREPLY=($(compgen -W "human brief unified dotlist json" -- "$cur"))
      else
        COMPREPLY=($(compgen -f -- "$cur"))
      fi
      return ;;
    --env|--config|--base|--recipes-dir) COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  local opts=""
  case $sub in
)" + cases + R"(  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    return
  fi
  case $sub in
    build|explain|launch) COMPREPLY=($(compgen -W "$models $specs" -- "$cur")) ;;
    diff|validate) COMPREPLY=($(compgen -W "$specs" -- "$cur") $(compgen -f -- "$cur")) ;;
    list) COMPREPLY=($(compgen -W "recipes gpus passes profiles invariants precisions" -- "$cur")) ;;
    completion) COMPREPLY=($(compgen -W "bash" -- "$cur")) ;;
  esac
}
complete -F _qwen_recipe qwen-recipe
)";
  write_output("", out);
  return 0;
}

} // namespace

void register_completion(CLI::App& app, GlobalOptions& global, std::function<int()>& action) {
  auto shell = std::make_shared<std::string>("bash");
  CLI::App* cmd = app.add_subcommand("completion", "print a shell completion script");
  cmd->add_option("shell", *shell, "the shell (bash)")->check(one_of({"bash"}));
  cmd->footer("Example:\n  source <(qwen-recipe completion bash)");
  cmd->fallthrough();
  cmd->callback([&app, &global, &action, shell] {
    action = [&app, &global] { return run_completion(app, global); };
  });
}

} // namespace qr::cli
