#include "launch/launch.h"

#include "diff/diff.h"
#include "launch/slurm_options.h"
#include "support/error.h"
#include "support/script_text.h"
#include "yaml/yaml_write.h"

#include <algorithm>
#include <filesystem>

namespace qr {
namespace {

// run_script.py takes no config file: it builds its recipe by name. This loader, run on every
// rank, loads our YAML with ConfigContainer.from_yaml (the inverse of the to_yaml our output
// matches), refuses to go on if that dropped any key (from_yaml is lenient: a key the installed
// classes lack is silently lost; transformers' HF sub-configs' model_type is the one known,
// harmless loss), makes run_script's recipe look-up return it, and runs run_script.main()
// unchanged, so every argparse-driven step of the entry point still applies.
// argv: MEGATRON_BRIDGE CONFIG run_script-flags...
const char* const kLoader =
    R"PY(import re, sys
sys.path.insert(0, sys.argv[1] + "/scripts/performance")
import run_script
import yaml
from megatron.bridge.training.config import ConfigContainer
config = sys.argv[2]
if not hasattr(run_script, "get_perf_recipe_by_name"):
    sys.exit("qwen-recipe launch: run_script.py has no get_perf_recipe_by_name to load " + config + " with; see docs/launch.md")
def paths(d, prefix=""):
    return {p for k, v in d.items() for p in [prefix + str(k)] + sorted(paths(v, prefix + str(k) + "."))} if isinstance(d, dict) else set()
loaded = ConfigContainer.from_yaml(config)
with open(config) as f:
    text = f.read()
dropped = sorted(p for p in paths(yaml.safe_load(text)) - paths(loaded.to_dict()) if not p.endswith(".model_type"))
if dropped:
    built = re.search(r" --mcore (\S+)", text.split("\n", 1)[0])
    sys.exit("qwen-recipe launch: this Megatron-Bridge did not load " + ", ".join(dropped) + " from " + config + " (its classes lack them), so it would train on another config; rebuild it with the --mcore profile of this container's Megatron-Core" + (" (it was built with --mcore " + built.group(1) + "; pinned is the one Megatron-Bridge main pins, without model.gdn_kernel_backend)" if built else "") + "; see docs/launch.md")
run_script.get_perf_recipe_by_name = lambda **_: loaded
sys.argv = ["run_script.py", *sys.argv[3:]]
run_script.main())PY";

// Megatron-Bridge's names for the precisions (argument_parser.py --compute_dtype).
// Slurm's time formats (sbatch --time): MIN, MIN:SEC, H:MIN:SEC, D-H, D-H:MIN, D-H:MIN:SEC, or
// UNLIMITED / INFINITE; each number 1-9 digits. Anything else sbatch refuses when the job is
// submitted, long after the script was written.
bool is_slurm_time(const std::string& text) {
  const auto is_word = [&](std::string_view word) {
    return text.size() == word.size() &&
           std::equal(text.begin(), text.end(), word.begin(), [](char a, char b) {
             return (a >= 'A' && a <= 'Z' ? a - 'A' + 'a' : a) == b;
           });
  };
  if (is_word("unlimited") || is_word("infinite"))
    return true;
  const auto numbers = [](std::string_view part, std::size_t most) {
    std::size_t count = 0;
    for (std::size_t start = 0;; ++count) {
      const std::size_t end = std::min(part.find(':', start), part.size());
      const std::string_view n = part.substr(start, end - start);
      if (n.empty() || n.size() > 9 ||
          !std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return false;
      if (end == part.size())
        return count + 1 <= most;
      start = end + 1;
    }
  };
  const std::string_view all(text);
  const std::size_t dash = all.find('-');
  if (dash == std::string_view::npos)
    return numbers(all, 3);
  return numbers(all.substr(0, dash), 1) && numbers(all.substr(dash + 1), 3);
}

std::string compute_dtype(const std::string& precision) {
  if (precision == "fp8cs")
    return "fp8_cs";
  if (precision == "fp8mx")
    return "fp8_mx";
  return precision;
}

// An #SBATCH line's value. To bash the line is a comment, so one line is all it takes; sbatch
// splits it at blanks outside double quotes and has no single quotes, so a value that is not a
// bare shell word is double-quoted, and the two bytes that would end or escape that are refused.
std::string sbatch_value(const std::string& text, const std::string& what) {
  require_one_line(text, what);
  const std::string word = shell_word(text, what);
  if (word == text)
    return text;
  if (text.find_first_of("\"\\") != std::string::npos)
    throw Error(what + " '" + escaped_for_message(text) +
                "' holds a double quote or a backslash, which sbatch does not "
                "read back from an #SBATCH line: remove it");
  return "\"" + text + "\"";
}

std::string env_text(const Value& v) {
  return v.is_str() ? v.as_str() : to_flow_yaml(v);
}

bool is_shell_name(const std::string& name) {
  return !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
         });
}

// The options launch writes itself, with the flag that sets them: the same option in an extra
// argument, in any spelling Slurm takes for it, would give one setting two values (or, for srun,
// run another rank layout, program or container than the one planned), so it is refused.
struct OwnedOption {
  SlurmCommand command;
  const char* name; // the option's long name in Slurm's table
  const char* flag;
};
constexpr const char* kContainerFlags = "--container-image and --container-mounts";
constexpr const char* kLayoutFlags = "--num-gpus, --nodes or --gpus-per-node";
const OwnedOption kOwnedOptions[] = {
    {SlurmCommand::sbatch, "job-name", "--job-name"},
    {SlurmCommand::sbatch, "nodes", "--nodes or --num-gpus"},
    {SlurmCommand::sbatch, "ntasks", "--num-gpus"},
    {SlurmCommand::sbatch, "ntasks-per-node", "--gpus-per-node"},
    {SlurmCommand::sbatch, "gpus-per-node", "--gpus-per-node"},
    {SlurmCommand::sbatch, "gpus", "--num-gpus"},
    {SlurmCommand::sbatch, "account", "-A"},
    {SlurmCommand::sbatch, "partition", "-p"},
    {SlurmCommand::sbatch, "time", "-t"},
    {SlurmCommand::sbatch, "reservation", "--reservation"},
    {SlurmCommand::sbatch, "segment", "--segment"},
    {SlurmCommand::srun, "nodes", kLayoutFlags},
    {SlurmCommand::srun, "ntasks", kLayoutFlags},
    {SlurmCommand::srun, "ntasks-per-node", kLayoutFlags},
    {SlurmCommand::srun, "gpus-per-node", kLayoutFlags},
    {SlurmCommand::srun, "gpus", kLayoutFlags},
    {SlurmCommand::srun, "segment", "--segment (an #SBATCH line)"},
    {SlurmCommand::srun, "multi-prog", "nothing: every rank runs the entry point"},
    {SlurmCommand::srun, "export", "--export or --env-file (site variables)"}};

// The flag that sets `option` instead, when launch owns it; nullptr when it does not. Every
// pyxis option, and Slurm's own --container (an OCI bundle), is launch's: the container is
// --container-image's, on srun only.
const char* owning_flag(SlurmCommand command, const SlurmOption& option) {
  if (option.name.starts_with("container") || option.name.starts_with("no-container-"))
    return kContainerFlags;
  for (const OwnedOption& own : kOwnedOptions)
    if (own.command == command) {
      const SlurmOption* o = slurm_option(command, own.name);
      if (o != nullptr && o->id == option.id)
        return own.flag;
    }
  return nullptr;
}

// One --sbatch-arg or --srun-arg, checked: one --NAME or --NAME=VALUE word that Slurm reads as
// one option, whatever follows it, and not one launch writes. Returns the option Slurm takes it
// for (nullptr: one Slurm 22.05 does not have, allowed only with its value inline).
const SlurmOption* extra_arg_option(SlurmCommand command, const std::string& arg) {
  const std::string flag = command == SlurmCommand::sbatch ? "--sbatch-arg" : "--srun-arg";
  const std::string tool = command == SlurmCommand::sbatch ? "sbatch" : "srun";
  require_one_line(arg, flag);
  const std::string shown = flag + " '" + escaped_for_message(arg) + "'";
  const std::size_t eq = arg.find('=');
  const std::string name = arg.substr(0, eq).substr(std::min<std::size_t>(2, arg.size()));
  const bool long_option =
      arg.starts_with("--") && !name.empty() && std::isalpha(static_cast<unsigned char>(name[0])) &&
      std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
      });
  if (!long_option)
    throw Error(shown + " is not a long " + tool +
                " option: give one word, --NAME or --NAME=VALUE (e.g. --qos=high; a short "
                "option or a value in the next word would take the words launch writes after it)");
  std::vector<std::string_view> candidates;
  const SlurmOption* option = resolve_slurm_option(command, name, candidates);
  if (!candidates.empty()) {
    std::string list;
    for (std::string_view c : candidates)
      list += (list.empty() ? "--" : ", --") + std::string(c);
    throw Error(shown + " abbreviates several " + tool + " options (" + list +
                "): spell the option out");
  }
  if (option == nullptr) {
    if (eq == std::string::npos)
      throw Error(shown + " is no " + tool +
                  " option of Slurm 22.05, so whether it takes the next word as its value is "
                  "unknown: give its value in the same word, --" +
                  name + "=VALUE");
    return nullptr;
  }
  const std::string spelled = "--" + std::string(option->name);
  if (const char* own = owning_flag(command, *option))
    throw Error(shown + " is " + tool + "'s " + spelled + ", which launch writes itself; give " +
                own + " instead");
  if (option->arg == SlurmArg::required && eq == std::string::npos)
    throw Error(shown + ": " + spelled +
                " takes a value, which would be the next word of the script: give it in the "
                "same word, --" +
                name + "=VALUE");
  if (option->arg == SlurmArg::none && eq != std::string::npos)
    throw Error(shown + ": " + spelled + " takes no value; give --" + name + " alone");
  return option;
}

// The #SBATCH line text of one --sbatch-arg.
std::string sbatch_arg_line(const std::string& arg) {
  extra_arg_option(SlurmCommand::sbatch, arg);
  const std::size_t eq = arg.find('=');
  if (eq == std::string::npos)
    return arg;
  return arg.substr(0, eq + 1) +
         sbatch_value(arg.substr(eq + 1), "--sbatch-arg " + arg.substr(0, eq));
}

// Whether an --sbatch-arg sets the option of that name (in any spelling sbatch takes for it).
bool has_sbatch_arg(const LaunchOptions& options, const std::string& name) {
  const SlurmOption* wanted = slurm_option(SlurmCommand::sbatch, name);
  return std::any_of(options.sbatch_args.begin(), options.sbatch_args.end(),
                     [&](const std::string& a) {
                       const SlurmOption* o = extra_arg_option(SlurmCommand::sbatch, a);
                       return o != nullptr && o->id == wanted->id;
                     });
}

// A path in pyxis's --container-mounts list: pyxis splits the list at ',' and an entry at ':',
// and enroot reads each mount as an fstab line (fields split at blanks, '#' a comment, '\\' an
// escape, '$' expanded). Only bytes none of them interprets are taken.
void require_mount_path(const std::string& path, const std::string& what) {
  const auto plain = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("/._+@%=~-").find(c) != std::string_view::npos;
  };
  const auto bad = std::find_if_not(path.begin(), path.end(), plain);
  if (path.empty() || bad != path.end())
    throw Error(what + " '" + escaped_for_message(path) + "'" +
                (path.empty() ? std::string(" is empty")
                              : " holds '" + escaped_for_message(std::string(1, *bad)) + "'") +
                ", and it goes into pyxis's --container-mounts, which takes only letters, digits "
                "and / . _ + @ % = ~ - in a path (',' and ':' separate mounts and their parts): "
                "move it to a folder without it");
}

// One --container-mounts entry, SRC[:DST[:FLAGS]], each part plain for pyxis and enroot.
void check_container_mount(const std::string& mount) {
  std::vector<std::string> parts{""};
  for (char c : mount)
    if (c == ':')
      parts.emplace_back();
    else
      parts.back() += c;
  if (parts.size() > 3)
    throw Error("--container-mounts '" + escaped_for_message(mount) +
                "' is not SRC[:DST[:FLAGS]]: pyxis reads a third ':' as part of the flags");
  for (std::size_t i = 0; i < parts.size() && i < 2; ++i)
    require_mount_path(parts[i], "--container-mounts " + std::string(i == 0 ? "source" : "target"));
  if (parts.size() == 3 &&
      (parts[2].empty() || !std::all_of(parts[2].begin(), parts[2].end(), [](char c) {
         return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-';
       })))
    throw Error("--container-mounts '" + escaped_for_message(mount) + "': the flags '" +
                escaped_for_message(parts[2]) +
                "' are not pyxis mount flags (e.g. ro, or ro+rprivate)");
}

// The variables the scripts set themselves; a site variable of that name would change what runs.
const char* const kScriptVariables[] = {"CONFIG", "MEGATRON_BRIDGE", "LOADER",
                                        "NODES",  "MASTER_ADDR",     "MASTER_PORT"};
// Variables whose value bash, the loader or Slurm reads as something other than data: bash runs
// PS4 under -x, PROMPT_COMMAND, BASH_ENV and ENV at start-up, and reads IFS, SHELLOPTS, CDPATH,
// GLOBIGNORE and the rest as settings; the loader loads LD_PRELOAD's and LD_AUDIT's libraries
// and GCONV_PATH's modules into every program; PATH picks the programs the scripts run.
const char* const kInterpretedVariables[] = {"PS0",
                                             "PS1",
                                             "PS2",
                                             "PS3",
                                             "PS4",
                                             "PROMPT_COMMAND",
                                             "ENV",
                                             "IFS",
                                             "SHELLOPTS",
                                             "BASHOPTS",
                                             "CDPATH",
                                             "GLOBIGNORE",
                                             "EXECIGNORE",
                                             "FIGNORE",
                                             "FUNCNEST",
                                             "TMOUT",
                                             "POSIXLY_CORRECT",
                                             "INPUTRC",
                                             "HISTFILE",
                                             "HOSTFILE",
                                             "MAILPATH",
                                             "MAIL",
                                             "OPTIND",
                                             "OPTERR",
                                             "UID",
                                             "EUID",
                                             "PPID",
                                             "GROUPS",
                                             "RANDOM",
                                             "SRANDOM",
                                             "SECONDS",
                                             "LINENO",
                                             "EPOCHSECONDS",
                                             "EPOCHREALTIME",
                                             "SHLVL",
                                             "PWD",
                                             "OLDPWD",
                                             "SHELL",
                                             "PATH",
                                             "LD_PRELOAD",
                                             "LD_AUDIT",
                                             "GCONV_PATH"};
// Families by prefix: bash's own (BASH_ENV, BASH_XTRACEFD, BASH_FUNC_*), and the variables sbatch,
// srun and their plugins read as options or job facts (SLURM_JOB_ID, SRUN_CONTAINER_IMAGE...).
const char* const kInterpretedPrefixes[] = {"BASH_",   "SLURM_", "SRUN_",  "SBATCH_",
                                            "SALLOC_", "SPANK_", "_SLURM_"};

// Why a variable of that name may not be set by a launch (empty: it may).
std::string refused_variable(const std::string& name) {
  for (const char* own : kScriptVariables)
    if (name == own)
      return name + " is set by the launch script itself";
  for (const char* v : kInterpretedVariables)
    if (name == v)
      return name + " is read by bash, the loader or the scripts as more than a value (code, "
                    "settings or the programs to run), so a launch does not set it";
  for (const char* prefix : kInterpretedPrefixes)
    if (name.starts_with(prefix))
      return name + " is in the " + prefix +
             "* family that bash or Slurm reads as code, options or job facts, so a launch does "
             "not set it";
  return {};
}

// Megatron-Bridge's slurm_executor (scripts/performance/utils/executors.py) on 4-GPU (NVL72)
// nodes: the whole job in one segment up to 18 nodes (one NVL72 rack), else the largest segment
// of at most 18 nodes that divides the node count.
int auto_segment(int nodes, int gpus_per_node) {
  if (gpus_per_node != 4)
    return 0;
  if (nodes <= 18)
    return nodes;
  for (int candidate = 18; candidate > 1; --candidate)
    if (nodes % candidate == 0)
      return candidate;
  return 1;
}

int segment_for(const std::string& text, int nodes, int gpus_per_node) {
  if (text == "auto")
    return auto_segment(nodes, gpus_per_node);
  if (text == "none")
    return 0;
  const bool count =
      !text.empty() && text.size() <= 6 && std::all_of(text.begin(), text.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      });
  if (!count || std::stoi(text) == 0)
    throw Error("--segment '" + escaped_for_message(text) +
                "' is not auto, none or a positive node count");
  const int segment = std::stoi(text);
  if (nodes % segment != 0)
    throw Error("--segment " + text + " does not divide the job's " + std::to_string(nodes) +
                " nodes (Slurm allocates whole segments): give a divisor, auto or none");
  return segment;
}

// The environment block shared by both scripts: the recipe's values are defaults, so a value
// already in the job's environment wins, as in Megatron-Bridge's bootstrap.py (setdefault).
std::string env_block(const LaunchPlan& plan) {
  std::string out =
      "# The recipe's env_vars. A variable already set in the job's environment wins, "
      "as in\n# Megatron-Bridge's scripts/performance/bootstrap.py.\n"
      "default_env() { if [ -z \"${!1+x}\" ]; then export \"$1=$2\"; fi; }\n";
  for (const Map::Entry* e : plan.env.sorted())
    out += "default_env " + e->first.text + " " +
           shell_word(env_text(e->second), "env_vars." + e->first.text) + "\n";
  if (!plan.site_env.empty()) {
    out += "\n# Site variables (--env-file, --export): set as given, over the job's environment "
           "and\n# the recipe's values.\n";
    for (const auto& [name, value] : plan.site_env)
      out += "export " + name + "=" + shell_word(value, "--export " + name) + "\n";
  }
  return out;
}

std::string loader_block() {
  return std::string("read -r -d '' LOADER <<'PY' || true\n") + kLoader + "\nPY\n";
}

std::string entry_line(const LaunchPlan& plan) {
  std::string out = "python -c \"$LOADER\" \"$MEGATRON_BRIDGE\" \"$CONFIG\"";
  for (const std::string& a : plan.entry_args)
    out.append(1, ' ').append(shell_word(a, "run_script.py flag"));
  return out;
}

std::string header(const LaunchPlan& plan, const std::string& kind) {
  require_one_line(plan.recipe, "recipe");
  require_one_line(plan.config_path, "--config");
  return "# " + kind + " for " + plan.recipe + ", written by qwen-recipe launch.\n" +
         "# Config: " + plan.config_path + " (" + plan.command + ")\n" +
         "# Runs Megatron-Bridge's performance entry point, scripts/performance/run_script.py, on "
         "that\n# config: " +
         std::to_string(plan.nodes) + " nodes x " + std::to_string(plan.gpus_per_node) +
         " GPUs = " + std::to_string(plan.num_gpus) + " ranks. See docs/launch.md.\n";
}

std::string config_lines(const LaunchPlan& plan) {
  return "CONFIG=" + shell_word(plan.config_path, "--config") +
         "\nMEGATRON_BRIDGE=" + shell_word(plan.megatron_bridge, "--megatron-bridge") + "\n";
}

} // namespace

std::pair<std::string, std::string> parse_site_variable(const std::string& text,
                                                        const std::string& what) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos)
    throw Error(what + " '" + escaped_for_message(text) + "' is not KEY=VALUE");
  std::string name = text.substr(0, eq), value = text.substr(eq + 1);
  if (!is_shell_name(name))
    throw Error(what + " '" + escaped_for_message(text) + "': '" + escaped_for_message(name) +
                "' is not a shell variable name (letters, digits and _, not first a digit)");
  if (const std::string why = refused_variable(name); !why.empty())
    throw Error(what + " '" + escaped_for_message(text) + "': " + why);
  require_one_line(value, what + " " + name);
  return {std::move(name), std::move(value)};
}

std::vector<std::pair<std::string, std::string>> parse_env_file(const std::string& text,
                                                                const std::string& path) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t start = 0;
  for (int line = 1; start < text.size(); ++line) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos)
      end = text.size();
    std::string content = text.substr(start, end - start);
    start = end + 1;
    if (content.ends_with('\r')) // a file written on Windows
      content.pop_back();
    const std::size_t first = content.find_first_not_of(" \t");
    if (first == std::string::npos || content[first] == '#')
      continue;
    out.push_back(parse_site_variable(content, path + ":" + std::to_string(line)));
  }
  return out;
}

LaunchPlan plan_launch(const BuildResult& result, const LaunchOptions& options) {
  if (!result.recipe)
    throw Error("launch needs a recipe (its GPU count and GPU type pick the nodes)");
  const RecipeSpec& spec = *result.recipe;
  LaunchPlan plan;
  plan.recipe = spec.id();
  // As Megatron-Bridge's -ng: another GPU count changes only the data parallelism.
  plan.num_gpus = options.num_gpus > 0 ? options.num_gpus : spec.entry->num_gpus;
  plan.gpus_per_node = options.gpus_per_node > 0 ? options.gpus_per_node : spec.gpu->gpus_per_node;
  if (plan.num_gpus % plan.gpus_per_node != 0)
    throw Error(spec.id() + " runs on " + std::to_string(plan.num_gpus) +
                " GPUs, which do not fill whole nodes of " + std::to_string(plan.gpus_per_node) +
                " (--gpus-per-node)");
  plan.nodes = plan.num_gpus / plan.gpus_per_node;
  plan.segment = segment_for(options.segment, plan.nodes, plan.gpus_per_node);
  for (const std::string& a : options.sbatch_args)
    sbatch_arg_line(a);
  require_one_line(options.reservation, "--reservation");
  for (const std::string& a : options.srun_args)
    extra_arg_option(SlurmCommand::srun, a);
  for (const auto& entry : options.site_env) {
    const auto same = [&](const auto& e) { return e.first == entry.first; };
    if (auto at = std::find_if(plan.site_env.begin(), plan.site_env.end(), same);
        at != plan.site_env.end())
      at->second = entry.second; // a later one wins, where the first one was
    else
      plan.site_env.push_back(entry);
  }
  plan.job_name = options.job_name.empty()
                      ? spec.model->name + "-" + spec.gpu->name + "-" + spec.precision
                      : options.job_name;
  // Launch options reach comments, #SBATCH lines and JSON: one printable line each.
  require_one_line(plan.job_name, "--job-name");
  // Slurm names the job's log `%x-%j.out` after it: a '/' would put the log in another folder
  // (or, where that folder is missing, fail the job before its script runs, with no log at all).
  if (plan.job_name.find('/') != std::string::npos)
    throw Error("--job-name '" + escaped_for_message(plan.job_name) +
                "' holds a '/': Slurm's log file %x-%j.out is named after it");
  for (const auto& [text, what] : {std::pair{&options.account, "--account"},
                                   {&options.partition, "--partition"},
                                   {&options.time_limit, "--time"},
                                   {&options.container_image, "--container-image"},
                                   {&options.megatron_bridge, "--megatron-bridge"},
                                   {&options.config_path, "--config"}})
    require_one_line(*text, what);
  if (!is_slurm_time(options.time_limit))
    throw Error("--time '" + escaped_for_message(options.time_limit) +
                "' is not a Slurm time limit (MIN, MIN:SEC, H:MIN:SEC, D-H, D-H:MIN, D-H:MIN:SEC "
                "or UNLIMITED)");
  for (const std::string& m : options.container_mounts)
    require_one_line(m, "--container-mounts");
  // srun mounts the config's folder into the container (slurm_script).
  if (!options.container_image.empty()) {
    require_mount_path(std::filesystem::path(options.config_path).parent_path().string(),
                       "the config's folder");
    for (const std::string& m : options.container_mounts)
      check_container_mount(m);
  }
  plan.config_path = options.config_path;
  plan.megatron_bridge = options.megatron_bridge;
  plan.command = result.command;
  if (const Value* env = result.config.find("env_vars"); env != nullptr && env->is_map())
    plan.env = env->as_map();
  for (const Map::Entry& e : plan.env) {
    const std::string& name = e.first.text;
    if (!is_shell_name(name))
      throw Error("env_vars." + escaped_for_message(name) +
                  " is not a shell variable name; a launch cannot export it");
    if (const std::string why = refused_variable(name); !why.empty())
      throw Error("env_vars." + name + ": " + why);
    if (!e.second.is_scalar() || e.second.is_null())
      throw Error("env_vars." + name + " is " + brief(e.second) +
                  "; environment variables take scalar values");
    if (env_text(e.second).find('\0') != std::string::npos)
      throw Error("env_vars." + name +
                  " holds a NUL byte, which no environment value can carry: "
                  "remove it");
  }
  // Megatron-Bridge's model recipe name, a user model's upstream one: never a key of ours.
  plan.entry_args = {"--domain", "qwen3vl",
                     "-m",       "qwen_vl",
                     "-mr",      spec.model->upstream,
                     "--task",   "pretrain",
                     "-ng",      std::to_string(plan.num_gpus),
                     "-g",       spec.gpu->name,
                     "-c",       compute_dtype(spec.precision)};
  return plan;
}

std::string slurm_script(const LaunchPlan& plan, const LaunchOptions& options) {
  std::string out =
      "#!/bin/bash\n" + header(plan, "Slurm batch script") +
      "# Submit: sbatch <this file>, from any directory (the config path is absolute).\n";
  auto sbatch = [&](const std::string& opt) { out += "#SBATCH " + opt + "\n"; };
  sbatch("--job-name=" + sbatch_value(plan.job_name, "--job-name"));
  sbatch("--nodes=" + std::to_string(plan.nodes));
  sbatch("--ntasks-per-node=" + std::to_string(plan.gpus_per_node));
  sbatch("--gpus-per-node=" + std::to_string(plan.gpus_per_node));
  if (!has_sbatch_arg(options, "exclusive"))
    sbatch("--exclusive");
  if (!options.account.empty())
    sbatch("--account=" + sbatch_value(options.account, "--account"));
  if (!options.partition.empty())
    sbatch("--partition=" + sbatch_value(options.partition, "--partition"));
  if (!options.reservation.empty())
    sbatch("--reservation=" + sbatch_value(options.reservation, "--reservation"));
  if (plan.segment > 0)
    sbatch("--segment=" + std::to_string(plan.segment));
  sbatch("--time=" + sbatch_value(options.time_limit, "--time"));
  if (!has_sbatch_arg(options, "output"))
    sbatch("--output=%x-%j.out");
  for (const std::string& a : options.sbatch_args)
    sbatch(sbatch_arg_line(a));
  out += "\nset -euo pipefail\n\n" + config_lines(plan) + "\n" + env_block(plan) +
         "\n# torch.distributed rendezvous: the first node, and a port from the job id (Megatron-"
         "Bridge\n# reads ranks from SLURM_PROCID, SLURM_LOCALID and SLURM_NTASKS).\n"
         "# (The whole list is read: `| head -n 1` would kill scontrol with SIGPIPE on big "
         "jobs, and\n# pipefail would end the job.)\n"
         "mapfile -t NODES < <(scontrol show hostnames \"$SLURM_JOB_NODELIST\")\n"
         "export MASTER_ADDR=\"${NODES[0]}\"\n"
         "# bash reads a variable's value in $(( )) as an expression, code included: the job id "
         "is\n# taken only as up to 18 decimal digits, and read in base 10.\n"
         "if [[ ! ${SLURM_JOB_ID-} =~ ^[0123456789]{1,18}$ ]]; then\n"
         "  echo \"qwen-recipe launch: SLURM_JOB_ID is not a job id; submit this script with "
         "sbatch\" >&2\n"
         "  exit 1\n"
         "fi\n"
         "export MASTER_PORT=$((20000 + 10#$SLURM_JOB_ID % 20000))\n\n" +
         loader_block() + "\n# One rank per GPU.\nsrun";
  for (const std::string& a : options.srun_args)
    out += " " + shell_word(a, "--srun-arg");
  if (!options.container_image.empty()) {
    std::string mounts;
    for (const std::string& m : options.container_mounts)
      mounts += "," + m;
    out += " --container-image=" + shell_word(options.container_image, "--container-image") +
           " \\\n  --container-mounts=\"$(dirname \"$CONFIG\"):$(dirname \"$CONFIG\")\"" +
           (mounts.empty() ? "" : shell_word(mounts, "--container-mounts")) +
           " --container-writable";
  }
  out += " \\\n  " + entry_line(plan) + "\n";
  return out;
}

std::string torchrun_script(const LaunchPlan& plan) {
  std::string out = "#!/bin/bash\n" + header(plan, "torchrun launch") +
                    "# Run it on every node, with NODE_RANK (0-" + std::to_string(plan.nodes - 1) +
                    ") and MASTER_ADDR (node 0's address) set.\n\nset -euo pipefail\n\n" +
                    config_lines(plan) + "\n" + env_block(plan) + "\n" + loader_block() +
                    "\ntorchrun --nnodes=" + std::to_string(plan.nodes) +
                    " --nproc-per-node=" + std::to_string(plan.gpus_per_node) +
                    " \\\n  --node-rank=\"${NODE_RANK:?set NODE_RANK}\" "
                    "--master-addr=\"${MASTER_ADDR:?set MASTER_ADDR}\" "
                    "--master-port=\"${MASTER_PORT:-29500}\" \\\n  --no-python " +
                    entry_line(plan) + "\n";
  return out;
}

std::string launch_json(const LaunchPlan& plan, const LaunchOptions& options) {
  auto str = [](const std::string& s) { return json_string(s); };
  auto list = [&](const std::vector<std::string>& v) {
    std::string out = "[";
    for (const std::string& s : v)
      out += (out.size() > 1 ? ", " : "") + str(s);
    return out + "]";
  };
  std::string site_env = "{";
  for (const auto& [name, value] : plan.site_env)
    site_env += (site_env.size() > 1 ? ", " : "") + str(name) + ": " + str(value);
  std::vector<std::string> argv{"python", "-c", kLoader, plan.megatron_bridge, plan.config_path};
  argv.insert(argv.end(), plan.entry_args.begin(), plan.entry_args.end());
  return "{\n  \"recipe\": " + str(plan.recipe) + ",\n  \"command\": " + str(plan.command) +
         ",\n  \"config\": " + str(plan.config_path) + ",\n  \"job_name\": " + str(plan.job_name) +
         ",\n  \"num_gpus\": " + std::to_string(plan.num_gpus) +
         ",\n  \"gpus_per_node\": " + std::to_string(plan.gpus_per_node) +
         ",\n  \"nodes\": " + std::to_string(plan.nodes) +
         ",\n  \"env\": " + to_json(Value(plan.env)) + ",\n  \"site_env\": " + site_env +
         "},\n  \"entry_point\": " +
         str(plan.megatron_bridge + "/scripts/performance/run_script.py") +
         ",\n  \"entry_args\": " + list(plan.entry_args) + ",\n  \"argv\": " + list(argv) +
         ",\n  \"slurm\": {\"account\": " + str(options.account) +
         ", \"partition\": " + str(options.partition) + ", \"time\": " + str(options.time_limit) +
         ", \"container_image\": " + str(options.container_image) +
         ", \"container_mounts\": " + list(options.container_mounts) +
         ", \"reservation\": " + str(options.reservation) +
         ", \"segment\": " + (plan.segment > 0 ? std::to_string(plan.segment) : "null") +
         ", \"sbatch_args\": " + list(options.sbatch_args) +
         ", \"srun_args\": " + list(options.srun_args) + "}\n}\n";
}

} // namespace qr
