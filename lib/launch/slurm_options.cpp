#include "launch/slurm_options.h"

#include <span>

namespace qr {
namespace {

// The tables are Slurm 22.05.8's own: the struct option arrays that slurm_option_table_create()
// of libslurmfull builds for getopt_long in sbatch and in srun (name, has_arg, val), as dumped
// from the library. Appended to both: pyxis's SPANK options (its --container-* family, which
// srun and sbatch take through the plugin) and --segment (Slurm 24.11), which launch writes
// itself; an option a later Slurm adds is unknown here, which an extra argument may use only with
// its value inline. Ids at or above kExtraIds are ours.
constexpr int kExtraIds = 100000;
constexpr SlurmOption kPyxisOptions[] = {
    {"container-image", SlurmArg::required, kExtraIds + 1},
    {"container-mounts", SlurmArg::required, kExtraIds + 2},
    {"container-workdir", SlurmArg::required, kExtraIds + 3},
    {"container-name", SlurmArg::required, kExtraIds + 4},
    {"container-save", SlurmArg::required, kExtraIds + 5},
    {"container-mount-home", SlurmArg::none, kExtraIds + 6},
    {"no-container-mount-home", SlurmArg::none, kExtraIds + 7},
    {"container-remap-root", SlurmArg::none, kExtraIds + 8},
    {"no-container-remap-root", SlurmArg::none, kExtraIds + 9},
    {"container-entrypoint", SlurmArg::none, kExtraIds + 10},
    {"no-container-entrypoint", SlurmArg::none, kExtraIds + 11},
    {"container-entrypoint-log", SlurmArg::none, kExtraIds + 12},
    {"container-writable", SlurmArg::none, kExtraIds + 13},
    {"container-readonly", SlurmArg::none, kExtraIds + 14},
    {"container-env", SlurmArg::required, kExtraIds + 15}};
// sbatch and srun both take --segment from Slurm 24.11 on.
constexpr SlurmOption kLaterOptions[] = {{"segment", SlurmArg::required, kExtraIds + 100}};

// sbatch 22.05.8: 106 long options.
constexpr SlurmOption kSbatchOptions[] = {
    {"account", SlurmArg::required, 65},
    {"acctg-freq", SlurmArg::required, 258},
    {"array", SlurmArg::required, 97},
    {"batch", SlurmArg::required, 261},
    {"begin", SlurmArg::required, 98},
    {"bb", SlurmArg::required, 267},
    {"bbf", SlurmArg::required, 266},
    {"cluster-constraint", SlurmArg::required, 269},
    {"chdir", SlurmArg::required, 68},
    {"cluster", SlurmArg::required, 268},
    {"clusters", SlurmArg::required, 77},
    {"comment", SlurmArg::required, 270},
    {"container", SlurmArg::required, 272},
    {"context", SlurmArg::required, 273},
    {"contiguous", SlurmArg::none, 274},
    {"constraint", SlurmArg::required, 67},
    {"core-spec", SlurmArg::required, 83},
    {"cores-per-socket", SlurmArg::required, 276},
    {"cpu-freq", SlurmArg::required, 278},
    {"cpus-per-gpu", SlurmArg::required, 279},
    {"cpus-per-task", SlurmArg::required, 99},
    {"deadline", SlurmArg::required, 280},
    {"delay-boot", SlurmArg::required, 282},
    {"dependency", SlurmArg::required, 100},
    {"distribution", SlurmArg::required, 109},
    {"error", SlurmArg::required, 101},
    {"exclude", SlurmArg::required, 120},
    {"exclusive", SlurmArg::optional, 286},
    {"export", SlurmArg::required, 287},
    {"export-file", SlurmArg::required, 288},
    {"extra-node-info", SlurmArg::required, 66},
    {"get-user-env", SlurmArg::optional, 289},
    {"gid", SlurmArg::required, 290},
    {"gpu-bind", SlurmArg::required, 291},
    {"gpu-freq", SlurmArg::required, 292},
    {"gpus", SlurmArg::required, 71},
    {"gpus-per-node", SlurmArg::required, 294},
    {"gpus-per-socket", SlurmArg::required, 295},
    {"gpus-per-task", SlurmArg::required, 296},
    {"gres", SlurmArg::required, 297},
    {"gres-flags", SlurmArg::required, 298},
    {"help", SlurmArg::none, 104},
    {"hint", SlurmArg::required, 299},
    {"hold", SlurmArg::none, 72},
    {"ignore-pbs", SlurmArg::none, 300},
    {"input", SlurmArg::required, 105},
    {"job-name", SlurmArg::required, 74},
    {"kill-on-invalid-dep", SlurmArg::required, 303},
    {"licenses", SlurmArg::required, 76},
    {"mail-type", SlurmArg::required, 307},
    {"mail-user", SlurmArg::required, 308},
    {"mcs-label", SlurmArg::required, 309},
    {"mem", SlurmArg::required, 310},
    {"mem-bind", SlurmArg::required, 311},
    {"mem-per-cpu", SlurmArg::required, 312},
    {"mem-per-gpu", SlurmArg::required, 313},
    {"mincpus", SlurmArg::required, 315},
    {"network", SlurmArg::required, 322},
    {"nice", SlurmArg::optional, 323},
    {"no-kill", SlurmArg::optional, 107},
    {"no-requeue", SlurmArg::none, 325},
    {"nodefile", SlurmArg::required, 70},
    {"nodelist", SlurmArg::required, 119},
    {"nodes", SlurmArg::required, 78},
    {"ntasks", SlurmArg::required, 110},
    {"ntasks-per-core", SlurmArg::required, 327},
    {"ntasks-per-gpu", SlurmArg::required, 328},
    {"ntasks-per-node", SlurmArg::required, 329},
    {"ntasks-per-socket", SlurmArg::required, 330},
    {"ntasks-per-tres", SlurmArg::required, 331},
    {"open-mode", SlurmArg::required, 332},
    {"output", SlurmArg::required, 111},
    {"overcommit", SlurmArg::none, 79},
    {"oversubscribe", SlurmArg::none, 115},
    {"parsable", SlurmArg::none, 335},
    {"partition", SlurmArg::required, 112},
    {"power", SlurmArg::required, 336},
    {"prefer", SlurmArg::required, 337},
    {"priority", SlurmArg::required, 338},
    {"profile", SlurmArg::required, 339},
    {"propagate", SlurmArg::optional, 341},
    {"qos", SlurmArg::required, 113},
    {"quiet", SlurmArg::none, 81},
    {"reboot", SlurmArg::none, 345},
    {"requeue", SlurmArg::none, 346},
    {"reservation", SlurmArg::required, 347},
    {"signal", SlurmArg::required, 350},
    {"sockets-per-node", SlurmArg::required, 352},
    {"spread-job", SlurmArg::none, 353},
    {"switches", SlurmArg::required, 356},
    {"tasks-per-node", SlurmArg::required, 329},
    {"test-only", SlurmArg::none, 359},
    {"thread-spec", SlurmArg::required, 360},
    {"threads-per-core", SlurmArg::required, 361},
    {"time", SlurmArg::required, 116},
    {"time-min", SlurmArg::required, 362},
    {"tmp", SlurmArg::required, 363},
    {"uid", SlurmArg::required, 365},
    {"use-min-nodes", SlurmArg::none, 368},
    {"verbose", SlurmArg::none, 118},
    {"version", SlurmArg::none, 86},
    {"usage", SlurmArg::none, 367},
    {"wait", SlurmArg::none, 87},
    {"wait-all-nodes", SlurmArg::required, 369},
    {"wckey", SlurmArg::required, 370},
    {"wrap", SlurmArg::required, 372},
};
// srun 22.05.8: 131 long options.
constexpr SlurmOption kSrunOptions[] = {
    {"accel-bind", SlurmArg::required, 257},
    {"account", SlurmArg::required, 65},
    {"acctg-freq", SlurmArg::required, 258},
    {"bcast", SlurmArg::optional, 262},
    {"bcast-exclude", SlurmArg::required, 263},
    {"begin", SlurmArg::required, 98},
    {"bb", SlurmArg::required, 267},
    {"bbf", SlurmArg::required, 266},
    {"cluster-constraint", SlurmArg::required, 269},
    {"chdir", SlurmArg::required, 68},
    {"cluster", SlurmArg::required, 268},
    {"clusters", SlurmArg::required, 77},
    {"comment", SlurmArg::required, 270},
    {"compress", SlurmArg::optional, 271},
    {"container", SlurmArg::required, 272},
    {"context", SlurmArg::required, 273},
    {"contiguous", SlurmArg::none, 274},
    {"constraint", SlurmArg::required, 67},
    {"core-spec", SlurmArg::required, 83},
    {"cores-per-socket", SlurmArg::required, 276},
    {"cpu-bind", SlurmArg::required, 277},
    {"cpu_bind", SlurmArg::required, 277},
    {"cpu-freq", SlurmArg::required, 278},
    {"cpus-per-gpu", SlurmArg::required, 279},
    {"cpus-per-task", SlurmArg::required, 99},
    {"deadline", SlurmArg::required, 280},
    {"debugger-test", SlurmArg::none, 281},
    {"delay-boot", SlurmArg::required, 282},
    {"dependency", SlurmArg::required, 100},
    {"disable-status", SlurmArg::none, 88},
    {"distribution", SlurmArg::required, 109},
    {"epilog", SlurmArg::required, 284},
    {"error", SlurmArg::required, 101},
    {"exact", SlurmArg::none, 285},
    {"exclude", SlurmArg::required, 120},
    {"exclusive", SlurmArg::optional, 286},
    {"export", SlurmArg::required, 287},
    {"extra-node-info", SlurmArg::required, 66},
    {"gid", SlurmArg::required, 290},
    {"gpu-bind", SlurmArg::required, 291},
    {"gpu-freq", SlurmArg::required, 292},
    {"gpus", SlurmArg::required, 71},
    {"gpus-per-node", SlurmArg::required, 294},
    {"gpus-per-socket", SlurmArg::required, 295},
    {"gpus-per-task", SlurmArg::required, 296},
    {"gres", SlurmArg::required, 297},
    {"gres-flags", SlurmArg::required, 298},
    {"help", SlurmArg::none, 104},
    {"het-group", SlurmArg::required, 334},
    {"hint", SlurmArg::required, 299},
    {"hold", SlurmArg::none, 72},
    {"immediate", SlurmArg::optional, 73},
    {"input", SlurmArg::required, 105},
    {"interactive", SlurmArg::none, 301},
    {"jobid", SlurmArg::required, 302},
    {"job-name", SlurmArg::required, 74},
    {"kill-on-bad-exit", SlurmArg::optional, 75},
    {"label", SlurmArg::none, 108},
    {"licenses", SlurmArg::required, 76},
    {"mail-type", SlurmArg::required, 307},
    {"mail-user", SlurmArg::required, 308},
    {"threads", SlurmArg::required, 84},
    {"mcs-label", SlurmArg::required, 309},
    {"mem", SlurmArg::required, 310},
    {"mem-bind", SlurmArg::required, 311},
    {"mem-per-cpu", SlurmArg::required, 312},
    {"mem-per-gpu", SlurmArg::required, 313},
    {"mincpus", SlurmArg::required, 315},
    {"mpi", SlurmArg::required, 319},
    {"msg-timeout", SlurmArg::required, 320},
    {"multi-prog", SlurmArg::none, 321},
    {"network", SlurmArg::required, 322},
    {"nice", SlurmArg::optional, 323},
    {"no-allocate", SlurmArg::none, 90},
    {"no-kill", SlurmArg::optional, 107},
    {"nodefile", SlurmArg::required, 70},
    {"nodelist", SlurmArg::required, 119},
    {"nodes", SlurmArg::required, 78},
    {"ntasks", SlurmArg::required, 110},
    {"ntasks-per-core", SlurmArg::required, 327},
    {"ntasks-per-gpu", SlurmArg::required, 328},
    {"ntasks-per-node", SlurmArg::required, 329},
    {"ntasks-per-socket", SlurmArg::required, 330},
    {"ntasks-per-tres", SlurmArg::required, 331},
    {"open-mode", SlurmArg::required, 332},
    {"output", SlurmArg::required, 111},
    {"overcommit", SlurmArg::none, 79},
    {"overlap", SlurmArg::optional, 333},
    {"oversubscribe", SlurmArg::none, 115},
    {"pack-group", SlurmArg::required, 334},
    {"partition", SlurmArg::required, 112},
    {"power", SlurmArg::required, 336},
    {"prefer", SlurmArg::required, 337},
    {"preserve-env", SlurmArg::none, 69},
    {"priority", SlurmArg::required, 338},
    {"profile", SlurmArg::required, 339},
    {"prolog", SlurmArg::required, 340},
    {"propagate", SlurmArg::optional, 341},
    {"pty", SlurmArg::none, 342},
    {"qos", SlurmArg::required, 113},
    {"quiet", SlurmArg::none, 81},
    {"quit-on-interrupt", SlurmArg::none, 343},
    {"reboot", SlurmArg::none, 345},
    {"relative", SlurmArg::required, 114},
    {"reservation", SlurmArg::required, 347},
    {"resv-ports", SlurmArg::optional, 348},
    {"send-libs", SlurmArg::optional, 349},
    {"signal", SlurmArg::required, 350},
    {"slurmd-debug", SlurmArg::required, 351},
    {"sockets-per-node", SlurmArg::required, 352},
    {"spread-job", SlurmArg::none, 353},
    {"switches", SlurmArg::required, 356},
    {"task-epilog", SlurmArg::required, 357},
    {"task-prolog", SlurmArg::required, 358},
    {"tasks-per-node", SlurmArg::required, 329},
    {"test-only", SlurmArg::none, 359},
    {"thread-spec", SlurmArg::required, 360},
    {"threads-per-core", SlurmArg::required, 361},
    {"time", SlurmArg::required, 116},
    {"time-min", SlurmArg::required, 362},
    {"tmp", SlurmArg::required, 363},
    {"uid", SlurmArg::required, 365},
    {"unbuffered", SlurmArg::none, 117},
    {"use-min-nodes", SlurmArg::none, 368},
    {"verbose", SlurmArg::none, 118},
    {"version", SlurmArg::none, 86},
    {"usage", SlurmArg::none, 367},
    {"wait", SlurmArg::required, 87},
    {"wckey", SlurmArg::required, 370},
    {"whole", SlurmArg::none, 371},
    {"x11", SlurmArg::optional, 373},
};

// In the order Slurm appends them: its own options, then the plugins'.
std::vector<std::span<const SlurmOption>> tables(SlurmCommand command) {
  if (command == SlurmCommand::sbatch)
    return {kSbatchOptions, kLaterOptions, kPyxisOptions};
  return {kSrunOptions, kLaterOptions, kPyxisOptions};
}

} // namespace

// glibc's getopt_long: an exact name wins; else every option the text is a prefix of is a
// candidate, and candidates that all have the same has_arg and val are one option (the first).
const SlurmOption* resolve_slurm_option(SlurmCommand command, std::string_view name,
                                        std::vector<std::string_view>& candidates) {
  candidates.clear();
  if (name.empty())
    return nullptr;
  if (const SlurmOption* exact = slurm_option(command, name))
    return exact;
  const SlurmOption* found = nullptr;
  bool ambiguous = false;
  for (const auto& t : tables(command))
    for (const SlurmOption& o : t) {
      if (!o.name.starts_with(name))
        continue;
      candidates.push_back(o.name);
      if (found == nullptr)
        found = &o;
      else if (found->arg != o.arg || found->id != o.id)
        ambiguous = true;
    }
  if (ambiguous)
    return nullptr;
  candidates.clear();
  return found;
}

const SlurmOption* slurm_option(SlurmCommand command, std::string_view name) {
  for (const auto& t : tables(command))
    for (const SlurmOption& o : t)
      if (o.name == name)
        return &o;
  return nullptr;
}

} // namespace qr
