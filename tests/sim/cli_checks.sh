#!/usr/bin/env bash
# The gpufair-sim command line end to end: every shipped scenario under the
# three policies with JSON/SVG output, byte-identical JSON for the same seed,
# and clear errors (exit status and file:line) for bad input.
# usage: cli_checks.sh GPUFAIR_SIM SIM_SOURCE_DIR
set -u
sim=$1; src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
check() { # check DESCRIPTION command...
  if ! "${@:2}"; then echo "FAILED: $1"; fail=1; else echo "ok: $1"; fi
}

# Every scenario, compared, with all outputs.
for s in "$src"/scenarios/*.yaml; do
  name=$(basename "$s" .yaml)
  check "$name runs" "$sim" --scenario "$s" --compare fifo,multifactor,gpufair --quiet \
    --out-dir "$tmp/$name" --svg "$tmp/$name"
  for p in fifo multifactor gpufair; do
    check "$name $p.json written" test -s "$tmp/$name/$p.json"
    check "$name $p.svg is an svg" grep -q '</svg>' "$tmp/$name/$p.svg"
  done
done

# Determinism: same seed, same bytes except wall time.
"$sim" --scenario "$src/scenarios/exploit.yaml" --policy gpufair --quiet --json "$tmp/a.json"
"$sim" --scenario "$src/scenarios/exploit.yaml" --policy gpufair --quiet --json "$tmp/b.json"
check "same seed gives identical JSON" cmp -s <(grep -v wall_seconds "$tmp/a.json") <(grep -v wall_seconds "$tmp/b.json")

# The table prints the gaming advantage with its definition.
out=$("$sim" --scenario "$src/scenarios/exploit.yaml" --policy fifo)
check "table shows the gaming advantage" grep -q "gaming advantage of teama" <<<"$out"
check "table defines the gaming advantage" grep -q "gaming advantage = median queue wait" <<<"$out"

# Bad input: exit status 1 and file:line.
printf 'submit,account,user,gpus,runtime\n0,a,u,1,10\n5,a,u,two,10\n' >"$tmp/bad.csv"
err=$("$sim" --trace "$tmp/bad.csv" --gpus 8 2>&1); rc=$?
check "bad row exits 1" test "$rc" -eq 1
check "bad row names file:line" grep -q "bad.csv:3: gpus 'two'" <<<"$err"
out=$("$sim" --trace "$tmp/bad.csv" --gpus 8 --skip-bad-rows --quiet --json "$tmp/skip.json"); rc=$?
check "--skip-bad-rows runs" test "$rc" -eq 0
check "--skip-bad-rows counts" grep -q '"skipped_rows": 1' "$tmp/skip.json"

# Usage errors: exit status 2 with the reason.
"$sim" --trace "$tmp/bad.csv" >/dev/null 2>&1; rc=$?
check "--trace without --gpus exits 2" test "$rc" -eq 2
err=$("$sim" --scenario "$src/scenarios/exploit.yaml" --set bait_treshold=1 2>&1); rc=$?
check "unknown policy key exits 2" test "$rc" -eq 2
check "unknown policy key is named" grep -q "bait_treshold" <<<"$err"
err=$("$sim" --scenario "$src/scenarios/exploit.yaml" --policy lottery 2>&1); rc=$?
check "unknown policy exits 2" test "$rc" -eq 2
err=$("$sim" --scenario "$tmp/missing.yaml" 2>&1); rc=$?
check "missing scenario exits 1" test "$rc" -eq 1
check "missing scenario is named" grep -q "missing.yaml: cannot open" <<<"$err"

# Converter round trip through the command line.
"$sim" convert --from helios "$src/convert/helios-sample.csv" -o "$tmp/helios.csv" 2>/dev/null
check "convert writes the trace" test -s "$tmp/helios.csv"
check "converted trace replays" "$sim" --trace "$tmp/helios.csv" --gpus 16 --gpus-per-node 8 --quiet

exit $fail
