#!/usr/bin/env bash
# Installs, where missing, the Debian packages the tests need: Mesa's
# software Vulkan for the headless egui_kittest renders, Xvfb and xdotool
# for the real-window test, ImageMagick for scripts/screenshots.sh, poppler
# (pdftoppm, pdftotext) to read the exported PDFs back. Uses
# apt-get as root, or through sudo; otherwise says what to install.
set -euo pipefail
need=()
for pkg in mesa-vulkan-drivers libvulkan1 xvfb xdotool imagemagick libxkbcommon-x11-0 libegl1 libgl1 poppler-utils; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
[ "${#need[@]}" -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
  apt=(apt-get)
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  apt=(sudo apt-get)
else
  echo "test-deps: please install: ${need[*]} (apt-get install ...); GUI tests fail without them" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
"${apt[@]}" update -qq
"${apt[@]}" install -y -qq "${need[@]}" >/dev/null
