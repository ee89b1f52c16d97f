// Slurm's own reading of the long options launch passes on (--sbatch-arg, --srun-arg): the tables
// of sbatch's and srun's long options, and getopt_long's rules for resolving an abbreviation, so
// that an extra argument is judged by the option Slurm will take it for, not by its spelling.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace qr {

enum class SlurmCommand { sbatch, srun };
enum class SlurmArg { none, required, optional };

struct SlurmOption {
  std::string_view name; // the long name, without "--"
  SlurmArg arg;
  int id; // one id per option: aliases (--tasks-per-node, --ntasks-per-node) share it
};

// The option `name` (NAME of --NAME[=VALUE]) stands for, as getopt_long resolves it: the exact
// name, else the one option whose names it is a prefix of (several names of one option count as
// one). nullptr when it is none; `candidates` then holds the names it abbreviates, if several.
const SlurmOption* resolve_slurm_option(SlurmCommand command, std::string_view name,
                                        std::vector<std::string_view>& candidates);

// The option of that exact long name (for naming launch's own options); nullptr if none.
const SlurmOption* slurm_option(SlurmCommand command, std::string_view name);

} // namespace qr
