#!/usr/bin/env bash
# The torchrun script `qwen-recipe launch --format torchrun` writes, run once under a real
# torchrun (PyTorch's), with the stand-in entry point of test/slurm/megatron-bridge, which loads
# the config with PyYAML and records its argv, environment and rank variables per worker.
# Checks: exit 0, one worker per GPU of the node (RANK and LOCAL_RANK 0-7, WORLD_SIZE 8), the
# entry point's argv as `launch --format json` states it, the config by its absolute path, every
# site and recipe variable exactly as given (hostile values included), and that no payload ran.
# Needs torchrun, and a python3 with torch and PyYAML (the one torchrun belongs to); no GPU is
# touched (the stand-in does not train).
#
# usage: test/slurm/torchrun_real.sh QWEN_RECIPE [WORKDIR]   (WORKDIR: a fresh temporary folder)
set -euo pipefail

binary=$(realpath "${1:?usage: torchrun_real.sh QWEN_RECIPE [WORKDIR]}")
work=${2:-$(mktemp -d)}
here=$(cd "$(dirname "$0")" && pwd)
python=$(command -v python3)
command -v torchrun >/dev/null || { echo "torchrun_real.sh: no torchrun on PATH" >&2; exit 2; }
if ! "$python" -c 'import torch, yaml'; then
  echo "torchrun_real.sh: $python lacks torch or yaml" >&2
  exit 2
fi

mkdir -p "$work/bin" "$work/records" "$work/elsewhere"
work=$(cd "$work" && pwd)
ln -sf "$python" "$work/bin/python" # the script runs `python`, the node's own
jobs="$work/jobs \$(touch PWNED) 'q'" # a hostile folder: the config path holds it
mkdir -p "$jobs"
canary="$work/PWNED"
# The values, as JSON: each goes through --export, an --env-file line and a YAML escape
# (line breaks only as YAML escapes: launch refuses them on a command line).
values=$(
  "$python" - "$canary" <<'PY'
import json, sys
c = sys.argv[1]
print(json.dumps({"SUBST": f"$(touch {c})", "BACKQUOTE": f"`touch {c}`",
                  "ARITH": f"PATH[$(touch {c})]", "SQUOTE": "a'b", "DQUOTE": 'a"b',
                  "SEMICOLON": f"a;touch {c}", "DOLLAR": "$HOME",
                  "BLANK": " a  b ", "LF": f"a\nb $(touch {c})", "CR": "a\rb", "LS": "a\u2028b"}))
PY
)
args=(qwen35_35b --gpu b200 --megatron-bridge "$here/megatron-bridge"
      --export "PYTHONPATH=$here/megatron-bridge/src" --env-file "$work/site.env")
: >"$work/site.env"
while IFS=$'\t' read -r name value_json; do
  value=$("$python" -c 'import json, sys; sys.stdout.write(json.loads(sys.argv[1]))' "$value_json")
  args+=("+env_vars.QR_YAML_$name=$value_json")
  if [[ $name != LF && $name != CR && $name != LS ]]; then
    args+=(--export "QR_EXPORT_$name=$value")
    printf 'QR_FILE_%s=%s\n' "$name" "$value" >>"$work/site.env"
  fi
done < <("$python" -c 'import json, sys
for k, v in json.loads(sys.argv[1]).items(): print(k + "\t" + json.dumps(v))' "$values")

"$binary" -q launch "${args[@]}" --format torchrun -o "$jobs/job.sh"
plan_dir=$(mktemp -d "$work/plan.XXXX")
(cd "$plan_dir" && "$binary" -q launch "${args[@]}" --format json --config plan.yaml >plan.json)

# Run from another folder, as on a node: NODE_RANK and MASTER_ADDR set, a free port.
port=$("$python" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
start=$(date +%s.%N)
(cd "$work/elsewhere" && env PATH="$work/bin:$PATH" QR_RECORD_DIR="$work/records" NODE_RANK=0 \
   MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" bash "$jobs/job.sh") >"$work/torchrun.log" 2>&1 || {
  echo "torchrun_real.sh: the script failed; its log:" >&2
  tail -n 40 "$work/torchrun.log" >&2
  exit 1
}
end=$(date +%s.%N)

"$python" - "$work" "$jobs/job.yaml" "$plan_dir/plan.json" "$values" "$canary" "$start" \
  "$end" <<'PY'
import json, pathlib, sys
import yaml
work, config, plan, values, canary, start, end = sys.argv[1:]
records = [json.loads(p.read_text())
           for p in sorted(pathlib.Path(work, "records").glob("torchrun-*.json"))]
plan, values = json.loads(pathlib.Path(plan).read_text()), json.loads(values)
gpus = plan["gpus_per_node"]
failures = []
if len(records) != gpus:
    failures.append(f"{len(records)} workers ran the entry point, want {gpus}")
for name in ("RANK", "LOCAL_RANK"):
    got = sorted(int(r["ranks"][name]) for r in records)
    if got != list(range(gpus)):
        failures.append(f"{name} {got}, want 0-{gpus - 1}")
data = yaml.safe_load(pathlib.Path(config).read_text(encoding="utf-8"))
as_recorded = json.loads(json.dumps(data))  # the record went through JSON (string keys)
for r in records:
    env, where = r["env"], f"rank {r['ranks']['RANK']}"
    want = {"WORLD_SIZE": str(gpus), "LOCAL_WORLD_SIZE": str(gpus), "MASTER_ADDR": "127.0.0.1"}
    want.update({f"QR_YAML_{k}": v for k, v in values.items()})
    want.update({f"QR_{src}_{k}": v for k, v in values.items() if k not in ("LF", "CR", "LS")
                 for src in ("EXPORT", "FILE")})
    want.update({k: str(v) for k, v in data["env_vars"].items() if k not in want})
    for name, value in want.items():
        if env.get(name) != value:
            failures.append(f"{where}: {name}={env.get(name)!r}, want {value!r}")
    if r["argv"] != ["run_script.py", *plan["entry_args"]]:
        failures.append(f"{where}: argv {r['argv']}")
    if r["config"] != config or r["config_data"] != as_recorded:
        failures.append(f"{where}: config {r['config']!r}, want {config!r} as PyYAML reads it")
if pathlib.Path(canary).exists() or list(pathlib.Path(work).rglob("PWNED")):
    failures.append("a payload ran: a PWNED file was created")
if failures:
    sys.exit("torchrun_real.sh: FAILED\n" + "\n".join(failures))
print(f"torchrun_real.sh: {len(records)} torchrun workers ran the entry point as launched "
      f"({float(end) - float(start):.1f} s): ranks, argv, config and {len(want)} variables checked")
PY
