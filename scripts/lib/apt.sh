# Sourced by the project's scripts: install Debian packages that are missing.
# Only packages not yet installed are passed to apt-get, and the package lists
# are refreshed at most once per run, so repeated calls are cheap.

gpufair_apt_install() {
  local missing=() pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' ||
      missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "gpufair: need root to install: ${missing[*]}" >&2
    return 1
  fi
  if [ -z "${GPUFAIR_APT_UPDATED:-}" ]; then
    apt-get update -q >/dev/null || { echo "gpufair: apt-get update failed" >&2; return 1; }
    export GPUFAIR_APT_UPDATED=1
  fi
  echo "gpufair: installing ${missing[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null ||
    { echo "gpufair: apt-get install ${missing[*]} failed" >&2; return 1; }
}

# What building the core, the simulator and the tests needs.
GPUFAIR_BUILD_PACKAGES=(build-essential cmake pkg-config libgtest-dev libgmock-dev
  libbenchmark-dev libyaml-dev python3)
