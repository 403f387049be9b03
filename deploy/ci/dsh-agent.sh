#!/bin/sh
# dsh-agent.sh runs a CI job's agent script confined by dsh: its own
# filesystem view of the checkout, memory and process limits, and egress
# only to the hosts of the policy file, every connection in the audit file
# the job keeps as an artifact. The GitHub Actions workflow and the GitLab
# CI job beside it both call it; copy it into your repository as ci/.
#
#   AGENT_SCRIPT         the agent script, inside the checkout (default ci/agent.sh)
#   AGENT_POLICY  the egress policy file (default ci/egress.yaml)
#   AGENT_AUDIT   where the egress audit lines go (default dsh-egress.jsonl)
#   AGENT_TIMEOUT how long the agent may run (default 30m)
#   AGENT_MEMORY  its memory limit (default 2GiB)
#
# Exit status: the agent's own; 125 when dsh itself failed (it cannot
# confine on this runner, a bad policy file, ...), 124 when the agent ran
# out of time. Any of them fails the job.
set -u

agent="${AGENT_SCRIPT:-ci/agent.sh}"
policy="${AGENT_POLICY:-ci/egress.yaml}"
audit="${AGENT_AUDIT:-dsh-egress.jsonl}"
timeout="${AGENT_TIMEOUT:-30m}"
memory="${AGENT_MEMORY:-2GiB}"

# Fail before the agent starts when this runner cannot confine it: doctor
# names the cause (on hosted runners, usually AppArmor's
# kernel.apparmor_restrict_unprivileged_userns) and the fix.
if ! dsh doctor >dsh-doctor.txt 2>&1; then
	cat dsh-doctor.txt >&2
	echo "dsh-agent: dsh cannot confine the agent on this runner; the report above names the cause and the fix" >&2
	exit 125
fi

: >"$audit"
dsh run --policy "$policy" --audit "$audit" --timeout "$timeout" --memory "$memory" -- "$agent" "$@"
status=$?
case "$status" in
0) ;;
125) echo "dsh-agent: dsh itself failed (exit 125), so the agent did not run to its end confined; its message is above" >&2 ;;
124) echo "dsh-agent: the agent ran longer than $timeout (AGENT_TIMEOUT) and was stopped" >&2 ;;
*) echo "dsh-agent: the agent exited $status" >&2 ;;
esac
echo "dsh-agent: egress audit: $(wc -l <"$audit") connection(s) in $audit" >&2
# Under sudo, the files the job keeps go back to the job's user, so the
# artifact step can read them.
if [ -n "${SUDO_UID:-}" ]; then
	chown "$SUDO_UID:${SUDO_GID:-$SUDO_UID}" "$audit" dsh-doctor.txt
fi
exit "$status"
