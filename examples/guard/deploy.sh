#!/bin/sh
# A toy deploy script with the three kinds of dependency the guard finds: a direct one (it downloads a release),
# a hidden one (a tool that checks for updates) and a call to an internal service (a transitive dependency).
#   sudo phalanx guard --audit --events events.jsonl -- examples/guard/deploy.sh
#   phalanx guard report events.jsonl
set -u
here=$(dirname "$0")
echo "deploy: fetching tools"
"$here/install-tools.sh" || echo "deploy: could not fetch tools, continuing with the installed ones"
echo "deploy: checking the migration service"
curl -sS -m 5 -o /dev/null "http://migrations.internal.example/status" || echo "deploy: migration service unreachable"
echo "deploy: done"
