#!/usr/bin/env bash
# Installs the Debian packages Crowsnest's tests need, only when missing.
#   hack/deps.sh postgres|chromium|node ...
set -euo pipefail

need_apt_update=1
apt_install() {
	if [[ $(id -u) != 0 ]]; then
		echo "deps: $* missing and not root; install them with: sudo apt-get install $*" >&2
		exit 1
	fi
	# One apt at a time: .ci/run's end-to-end suites run beside make test,
	# and a second apt-get fails at once on dpkg's lock instead of waiting.
	exec {lock}>"${TMPDIR:-/tmp}/crowsnest-apt.lock"
	flock "$lock"
	if ((need_apt_update)); then
		apt-get update -qq
		need_apt_update=0
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=600 "$@" >/dev/null
	exec {lock}>&-
}

for dep in "$@"; do
	case $dep in
	postgres)
		compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || command -v initdb >/dev/null ||
			apt_install postgresql
		;;
	chromium)
		[[ -x /usr/bin/chromium ]] || apt_install chromium fonts-dejavu-core
		;;
	node)
		# The local stack's real node: containerd and runc run the scan Pods,
		# the CNI plugins give them the node's bridge network, ipset holds the
		# address sets of kube-router's NetworkPolicy rules.
		[[ -x /usr/bin/containerd && -x /usr/bin/runc && -x /usr/lib/cni/bridge && -x /usr/sbin/iptables && -x /usr/sbin/ipset ]] ||
			apt_install containerd runc containernetworking-plugins iptables ipset
		;;
	*) echo "deps: unknown dependency $dep" >&2; exit 2 ;;
	esac
done
