#!/bin/bash
# check-exports.sh PLUGIN.so KIND: the plugin exports exactly what Slurm's
# loader needs (plugin_name, plugin_type, plugin_version, init, fini and the
# entry points of its KIND, priority or preempt), nothing C++ and nothing
# else; it links libgpufair.so and not libslurm.
set -euo pipefail
so=$1 kind=$2
fail() { echo "FAIL: $so: $*" >&2; exit 1; }
[ -f "$so" ] || fail "missing"

case "$kind" in
priority) want="priority_p_set priority_p_reconfig priority_p_set_assoc_usage
  priority_p_calc_fs_factor priority_p_get_priority_factors_list priority_p_job_end" ;;
preempt) want="preempt_p_job_preempt_check preempt_p_preemptable preempt_p_get_data" ;;
*) fail "unknown kind $kind" ;;
esac

defined=$(nm -D --defined-only "$so" | awk '{print $3}' | sed 's/@.*//' | sort -u)
echo "$so exports:"; echo "$defined" | sed 's/^/  /'

for s in plugin_name plugin_type plugin_version init fini $want; do
	grep -qx "$s" <<<"$defined" || fail "does not export $s"
done
# Data symbols must be data, entry points functions.
for s in plugin_name plugin_type plugin_version; do
	nm -D --defined-only "$so" | grep -qE " [RDB] $s\$" || fail "$s is not a data symbol"
done
for s in init fini $want; do
	nm -D --defined-only "$so" | grep -qE " T $s\$" || fail "$s is not a function"
done
extra=$(grep -vxE "plugin_name|plugin_type|plugin_version|init|fini|${kind}_p_[a-z_]+" <<<"$defined" || true)
[ -z "$extra" ] || fail "exports more than the plugin interface: $extra"
grep -q '^_Z' <<<"$defined" && fail "exports C++ symbols"
# Lazily bound, plain -shared: no BIND_NOW, linked to libgpufair, not libslurm.
dyn=$(readelf -d "$so")
grep -q 'NEEDED.*libgpufair\.so' <<<"$dyn" || fail "does not link libgpufair.so"
grep -qE 'NEEDED.*libslurm' <<<"$dyn" && fail "links libslurm (slurmctld provides Slurm's symbols)"
grep -qE 'BIND_NOW|FLAGS_1.*NOW' <<<"$dyn" && fail "is linked with -z now"
echo "OK: $so exports the $kind plugin interface and nothing else"
