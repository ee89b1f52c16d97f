#include "launch/launch.h"

#include "diff/diff.h"
#include "support/error.h"
#include "support/script_text.h"
#include "yaml/yaml_write.h"

#include <algorithm>

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
    throw Error(what + " '" + text +
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

// The #SBATCH options launch writes from its own flags: the same option in --sbatch-arg would
// leave two values for one setting, so it is refused, naming the flag to use.
const std::pair<const char*, const char*> kOwnSbatchOptions[] = {
    {"job-name", "--job-name"},
    {"nodes", "--nodes or --num-gpus"},
    {"ntasks-per-node", "--gpus-per-node"},
    {"gpus-per-node", "--gpus-per-node"},
    {"account", "-A"},
    {"partition", "-p"},
    {"time", "-t"},
    {"reservation", "--reservation"},
    {"segment", "--segment"}};

// An --sbatch-arg's option name (NAME of --NAME[=VALUE]), checked.
std::string sbatch_arg_name(const std::string& arg) {
  const std::string name =
      arg.substr(0, arg.find('=')).substr(std::min<std::size_t>(2, arg.size()));
  const bool long_option =
      arg.starts_with("--") && !name.empty() && std::isalpha(static_cast<unsigned char>(name[0])) &&
      std::all_of(name.begin(), name.end(),
                  [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-'; });
  if (!long_option)
    throw Error("--sbatch-arg '" + escaped_for_message(arg) +
                "' is not a long sbatch option: give --NAME or --NAME=VALUE (e.g. --qos=high)");
  for (const auto& [own, flag] : kOwnSbatchOptions)
    if (name == own)
      throw Error("--sbatch-arg '" + escaped_for_message(arg) + "': launch writes --" + name +
                  " itself; give " + flag + " instead");
  return name;
}

// The #SBATCH line text of one --sbatch-arg.
std::string sbatch_arg_line(const std::string& arg) {
  const std::string name = sbatch_arg_name(arg);
  const std::size_t eq = arg.find('=');
  if (eq == std::string::npos)
    return arg;
  return "--" + name + "=" + sbatch_value(arg.substr(eq + 1), "--sbatch-arg --" + name);
}

bool has_sbatch_arg(const LaunchOptions& options, const std::string& name) {
  return std::any_of(options.sbatch_args.begin(), options.sbatch_args.end(),
                     [&](const std::string& a) { return sbatch_arg_name(a) == name; });
}

// The variables the scripts set themselves; a site variable of that name would change what runs.
const char* const kScriptVariables[] = {"CONFIG", "MEGATRON_BRIDGE", "LOADER",
                                        "NODES",  "MASTER_ADDR",     "MASTER_PORT"};

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
  for (const char* own : kScriptVariables)
    if (name == own)
      throw Error(what + " '" + escaped_for_message(text) + "': " + name +
                  " is set by the launch script itself");
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
  for (const std::string& a : options.srun_args) {
    require_one_line(a, "--srun-arg");
    if (!a.starts_with("-"))
      throw Error("--srun-arg '" + a +
                  "' is not an srun option (srun would run it as the command): give options "
                  "with their values as one word, --NAME=VALUE");
    if (a.starts_with("--container-"))
      throw Error("--srun-arg '" + a +
                  "': launch writes srun's container options from --container-image and "
                  "--container-mounts; give those instead");
  }
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
  for (const auto& [text, what] : {std::pair{&options.account, "--account"},
                                   {&options.partition, "--partition"},
                                   {&options.time_limit, "--time"},
                                   {&options.container_image, "--container-image"},
                                   {&options.megatron_bridge, "--megatron-bridge"},
                                   {&options.config_path, "--config"}})
    require_one_line(*text, what);
  for (const std::string& m : options.container_mounts)
    require_one_line(m, "--container-mounts");
  plan.config_path = options.config_path;
  plan.megatron_bridge = options.megatron_bridge;
  plan.command = result.command;
  if (const Value* env = result.config.find("env_vars"); env != nullptr && env->is_map())
    plan.env = env->as_map();
  for (const Map::Entry& e : plan.env) {
    const std::string& name = e.first.text;
    if (!is_shell_name(name))
      throw Error("env_vars." + name + " is not a shell variable name; a launch cannot export it");
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
         "export MASTER_PORT=$((20000 + SLURM_JOB_ID % 20000))\n\n" +
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
