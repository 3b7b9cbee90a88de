# Sourced by every project script that installs Debian packages (the one
# place that calls apt-get install): install the packages that are missing.
# Only packages not yet installed are passed to apt-get, and the package lists
# are refreshed at most once per run, so repeated calls are cheap.

gpufair_apt_install() {
  local missing=() pkg log
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' ||
      missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "gpufair: need root to install: ${missing[*]}" >&2
    return 1
  fi
  # apt's output goes to a log that is shown only when something fails.
  log=$(mktemp /tmp/gpufair-apt.XXXXXX)
  if [ -z "${GPUFAIR_APT_UPDATED:-}" ]; then
    if ! apt-get update -q >"$log" 2>&1; then
      tail -n 20 "$log" >&2
      echo "gpufair: apt-get update failed (log: $log)" >&2
      return 1
    fi
    export GPUFAIR_APT_UPDATED=1
  fi
  echo "gpufair: installing ${missing[*]}" >&2
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      "${missing[@]}" >>"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "gpufair: apt-get install ${missing[*]} failed (log: $log)" >&2
    return 1
  fi
  rm -f "$log"
}

# What building the core, the simulator and the tests needs.
GPUFAIR_BUILD_PACKAGES=(build-essential cmake pkg-config libgtest-dev libgmock-dev
  libbenchmark-dev libyaml-dev python3)
