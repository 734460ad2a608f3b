#!/usr/bin/env bash
# Build (once) and cache the sandbox's Kubernetes control plane:
#   etcd 3.4 (Debian package etcd-server) and kube-apiserver, kube-controller-manager and
#   kube-scheduler v1.20.2 built from Debian bookworm's `kubernetes` source package.
#
# Cache: ${CLM_CACHE:-$HOME/.cache/clm}/control-plane/v1.20.2/ holding the four binaries and
# manifest.sha256, which is written last: a cache whose manifest is missing or does not match
# the binaries is rebuilt. A complete cache makes this script return at once.
#
# Needs root (or sudo) for apt-get. Measured on 2 cores: 6-13 minutes (depending on what else
# runs), ~1.5 GB peak memory, a few GB of disk in the build tree (under ${TMPDIR:-/tmp}, removed
# afterwards). The system's apt configuration
# is left alone: the deb-src entry lives in a private apt configuration in the build tree.
#
# Usage: build-control-plane.sh [--check]   (--check: exit 0 if the cache is complete, else 1)
#
# Environment:
#   CLM_CACHE        cache root (default: $HOME/.cache/clm)
#   CLM_KEEP_BUILD=1 keep the build tree (also on failure) for debugging
#   TMPDIR           where the build tree is made
set -euo pipefail

readonly K8S_VERSION="v1.20.2"
readonly BINARIES=(kube-apiserver kube-controller-manager kube-scheduler etcd)
readonly APT_PACKAGES=(etcd-server golang-1.19-go golang-github-modern-go-reflect2-dev rsync make dpkg-dev openssl)
readonly GO_BIN="/usr/lib/go-1.19/bin"
readonly REFLECT2_SRC="/usr/share/gocode/src/github.com/modern-go/reflect2"

CACHE_ROOT="${CLM_CACHE:-${HOME:?HOME is not set; set CLM_CACHE}/.cache/clm}"
DEST="${CACHE_ROOT}/control-plane/${K8S_VERSION}"
START_SECONDS=${SECONDS}

log() { printf '[build-control-plane %4ds] %s\n' "$((SECONDS - START_SECONDS))" "$*"; }
die() { printf '[build-control-plane] ERROR: %s\n' "$*" >&2; exit 1; }

# SHA-256 lines ("<hex> *<name>", as `sha256sum -b` writes them) for the named files in the
# current directory. openssl uses the CPU's SHA instructions: several times faster than sha256sum.
sha256_lines() {
    if command -v openssl >/dev/null 2>&1; then
        openssl dgst -sha256 -r "$@"
    else
        sha256sum -b "$@"
    fi
}

# True when $1 holds every binary and a manifest.sha256 that lists each of them and matches.
cache_ok() {
    local dir="$1" name expected actual
    [[ -s "${dir}/manifest.sha256" ]] || return 1
    for name in "${BINARIES[@]}"; do
        [[ -x "${dir}/${name}" ]] || return 1
        grep -Eq "^[0-9a-f]{64} [ *]${name}\$" "${dir}/manifest.sha256" || return 1
    done
    expected="$(sed -E 's/^([0-9a-f]{64}) [ *]/\1 /' "${dir}/manifest.sha256" | sort)" || return 1
    actual="$(cd "${dir}" && sha256_lines "${BINARIES[@]}" 2>/dev/null | sed -E 's/^([0-9a-f]{64}) [ *]/\1 /' | sort)" ||
        return 1
    [[ "${expected}" == "${actual}" ]]
}

case "${1:-}" in
    "") ;;
    --check)  # exit 0 when the cache is complete, 1 when it would be (re)built
        if cache_ok "${DEST}"; then log "cache complete: ${DEST}"; exit 0; fi
        log "cache missing or corrupt: ${DEST}"
        exit 1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (usage: $0 [--check])" ;;
esac

if cache_ok "${DEST}"; then
    log "cache complete: ${DEST}"
    exit 0
fi

mkdir -p "${CACHE_ROOT}/control-plane" || die "cannot create the cache directory ${CACHE_ROOT}/control-plane"
# One build at a time per cache; a second caller waits and then finds the cache complete.
exec 9>"${CACHE_ROOT}/control-plane/.build.lock"
if ! flock -n 9; then
    log "another build holds ${CACHE_ROOT}/control-plane/.build.lock; waiting for it"
    flock 9
fi
if cache_ok "${DEST}"; then
    log "cache complete (built by another process): ${DEST}"
    exit 0
fi
if [[ -e "${DEST}" ]]; then
    log "cache at ${DEST} is incomplete or corrupt (manifest missing or mismatched); rebuilding"
fi

SUDO=()
if [[ ${EUID} -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || die "apt-get needs root: run as root or install sudo"
    SUDO=(sudo)
fi

# --- 1. Debian packages -----------------------------------------------------------------
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    if [[ "$(dpkg-query -W -f='${Status}' "${pkg}" 2>/dev/null || true)" != "install ok installed" ]]; then
        missing+=("${pkg}")
    fi
done
if ((${#missing[@]})); then
    log "installing Debian packages: ${missing[*]}"
    "${SUDO[@]}" apt-get update -qq || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" \
        >/dev/null || die "apt-get install ${missing[*]} failed"
else
    log "Debian packages present: ${APT_PACKAGES[*]}"
fi
[[ -x "${GO_BIN}/go" ]] || die "${GO_BIN}/go not found after installing golang-1.19-go"
[[ -f "${REFLECT2_SRC}/reflect2.go" ]] || die "${REFLECT2_SRC} not found (golang-github-modern-go-reflect2-dev)"
ETCD_PATH="$(command -v etcd || true)"
[[ -n "${ETCD_PATH}" ]] || ETCD_PATH=/usr/bin/etcd
[[ -x "${ETCD_PATH}" ]] || die "etcd not found after installing etcd-server"

# --- 2. Build tree and private apt configuration for `apt-get source` --------------------
BUILD="$(mktemp -d "${TMPDIR:-/tmp}/clm-control-plane-build.XXXXXX")" || die "cannot create a build directory"
cleanup() {
    local rc=$?
    if [[ "${CLM_KEEP_BUILD:-0}" == 1 ]]; then
        log "keeping the build tree ${BUILD} (CLM_KEEP_BUILD=1)"
    else
        chmod -R u+w "${BUILD}" 2>/dev/null || true   # Go's module cache is read-only
        rm -rf "${BUILD}" "${DEST}.partial"
    fi
    if ((rc != 0)); then
        printf '[build-control-plane] FAILED after %ds (exit %d)\n' "$((SECONDS - START_SECONDS))" "${rc}" >&2
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
log "build tree: ${BUILD}"

APT_DIR="${BUILD}/apt"
mkdir -p "${APT_DIR}/lists/partial" "${APT_DIR}/sources.list.d"
# Source entries for bookworm on the same Debian mirrors the system's apt already uses.
host_codename="$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")"
signed_by=""
[[ -f /usr/share/keyrings/debian-archive-keyring.gpg ]] &&
    signed_by="[signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
apt-get indextargets --format '$(REPO_URI) $(CODENAME)' \
    'Identifier: Packages' 'Origin: Debian' 'Component: main' 2>/dev/null |
    sort -u |
    while read -r uri codename; do
        case "${codename}" in
            "${host_codename}" | "${host_codename}"-security | "${host_codename}"-updates)
                printf 'deb-src %s%s %s main\n' "${signed_by}" "${uri}" "bookworm${codename#"${host_codename}"}" ;;
        esac
    done >"${APT_DIR}/sources.list" || true
[[ -s "${APT_DIR}/sources.list" ]] ||
    die "no Debian mirror found in the system's apt configuration (apt-get indextargets); run 'apt-get update'"
APT_OPTS=(
    -o "Dir::Etc::SourceList=${APT_DIR}/sources.list"
    -o "Dir::Etc::SourceParts=${APT_DIR}/sources.list.d"
    -o "Dir::State::Lists=${APT_DIR}/lists"
    -o "Dir::Cache::pkgcache="
    -o "Dir::Cache::srcpkgcache="
    -o "APT::Sandbox::User=root"
)
log "fetching source indexes (private apt configuration)"
apt-get "${APT_OPTS[@]}" update -qq >"${BUILD}/apt-update.log" 2>&1 ||
    { tail -20 "${BUILD}/apt-update.log" >&2; die "apt-get update (private deb-src configuration) failed"; }

log "downloading and unpacking Debian's kubernetes source package"
(cd "${BUILD}" && apt-get "${APT_OPTS[@]}" source -qq kubernetes >"${BUILD}/apt-source.log" 2>&1) ||
    { tail -20 "${BUILD}/apt-source.log" >&2; die "apt-get source kubernetes failed"; }
SRC=""
for dir in "${BUILD}"/kubernetes-*/; do
    [[ -d "${dir}" ]] && SRC="${dir%/}"
done
[[ -n "${SRC}" && -f "${SRC}/Makefile" ]] || die "no unpacked kubernetes source tree in ${BUILD}"
src_version="$(cd "${SRC}" && dpkg-parsechangelog -S Version)"
[[ "${src_version}" == *"${K8S_VERSION#v}"* ]] ||
    die "Debian's kubernetes source is ${src_version}, expected upstream ${K8S_VERSION}"
log "source: kubernetes ${src_version}"
rm -f "${BUILD}"/kubernetes_*   # the downloaded archives, now unpacked

# --- 3. Patch and build -------------------------------------------------------------------
# The vendored reflect2 1.0.1 crashes under Go 1.19 on the first custom object; use 1.0.2.
[[ -d "${SRC}/vendor/github.com/modern-go/reflect2" ]] || die "vendored reflect2 not found in ${SRC}"
rm -rf "${SRC}/vendor/github.com/modern-go/reflect2"
cp -rL "${REFLECT2_SRC}" "${SRC}/vendor/github.com/modern-go/reflect2"
find "${SRC}/vendor/github.com/modern-go/reflect2" -name '*_test.go' -delete
sed -i 's|^# github.com/modern-go/reflect2 v1.0.1$|# github.com/modern-go/reflect2 v1.0.2|' "${SRC}/vendor/modules.txt"
log "replaced vendored github.com/modern-go/reflect2 with Debian's 1.0.2"

# No git tree here: stamp the version the binaries report.
cat >"${BUILD}/version.env" <<EOF
KUBE_GIT_VERSION='${K8S_VERSION}'
KUBE_GIT_MAJOR='1'
KUBE_GIT_MINOR='20'
KUBE_GIT_COMMIT=''
KUBE_GIT_TREE_STATE='archive'
EOF

log "compiling kube-apiserver, kube-controller-manager, kube-scheduler (several minutes)"
(
    cd "${SRC}"
    export PATH="${GO_BIN}:${PATH}"
    export GOPROXY=off CGO_ENABLED=0 GOFLAGS= GOCACHE="${BUILD}/gocache" GOTMPDIR= \
        KUBE_GIT_VERSION_FILE="${BUILD}/version.env" KUBE_VERBOSE=1
    make WHAT="cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler"
) >"${BUILD}/make.log" 2>&1 || { tail -40 "${BUILD}/make.log" >&2; die "make failed (log tail above)"; }
OUT="${SRC}/_output/bin"
[[ -d "${OUT}" ]] || OUT="${SRC}/_output/local/bin/linux/amd64"
for name in kube-apiserver kube-controller-manager kube-scheduler; do
    [[ -x "${OUT}/${name}" ]] || die "make finished but ${OUT}/${name} is missing (see the build log)"
done
log "compiled"

# --- 4. Install into the cache; manifest.sha256 last ----------------------------------------
rm -rf "${DEST}" "${DEST}.partial"
mkdir -p "${DEST}.partial"
for name in kube-apiserver kube-controller-manager kube-scheduler; do
    cp "${OUT}/${name}" "${DEST}.partial/${name}"
done
cp -L "${ETCD_PATH}" "${DEST}.partial/etcd"
chmod 0755 "${DEST}.partial"/*
(cd "${DEST}.partial" && sha256_lines "${BINARIES[@]}" >manifest.sha256.tmp && mv manifest.sha256.tmp manifest.sha256)
mv "${DEST}.partial" "${DEST}"
cache_ok "${DEST}" || die "the cache at ${DEST} does not verify right after writing it"
"${DEST}/kube-apiserver" --version >/dev/null 2>&1 || die "${DEST}/kube-apiserver does not run"
log "cached $("${DEST}/kube-apiserver" --version) and $("${DEST}/etcd" --version | head -1) in ${DEST}"
log "removing the build tree"
