# sourced by the scripts that need Debian packages: ensure_packages TAG PACKAGE... installs the
# missing ones (as root, idempotent), or names them and exits 1 when not root
ensure_packages() {
  local tag=$1 missing="" p
  shift
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
  done
  [ -z "$missing" ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "$tag: missing packages:$missing (run as root, or: sudo apt-get install$missing)" >&2
    exit 1
  fi
  echo "$tag: installing$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
}
