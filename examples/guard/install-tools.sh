#!/bin/sh
# Direct dependency: the latest release of a tool, from the code host.
curl -sSL -m 10 -o /dev/null "https://github.com/example/tool/releases/latest"
