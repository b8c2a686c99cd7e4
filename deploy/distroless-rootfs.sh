#!/bin/sh
# The runtime image's root, distroless-style: `deploy/distroless-rootfs.sh ROOT`, run in the
# Containerfile's `rootfs` stage on the build's own Debian base (the official node image, or the
# one deploy/build-image.sh bootstraps offline). Only what Node.js runs on: the C and C++ runtime
# libraries (libc6, libgcc-s1, libstdc++6), the time zones (tzdata), the CA bundle, /etc/passwd
# with root and the broker's user 10001, and /usr/local/bin/node. No shell, no package manager,
# no coreutils: nothing in it can run a script. The packages' files are copied from the base's dpkg
# database (as distroless extracts its .debs), without docs (copyrights kept), glibc's iconv
# modules or libstdc++'s Python pretty-printers for gdb; /var/lib/dpkg/status.d names each package so SBOM scanners see them (distroless's
# layout). The base's packages are the ones its digest pins: nothing is downloaded here.
set -eu
root="$1"
packages="libc6 libgcc-s1 libstdc++6 tzdata"

mkdir -p "$root/usr/bin" "$root/usr/sbin" "$root/usr/lib" "$root/usr/lib64" "$root/usr/local/bin" \
  "$root/etc/ssl/certs" "$root/var/lib/dpkg/status.d" "$root/tmp" "$root/home/tokensmith"
# /usr merged, as in Debian's images: /lib64/ld-linux-x86-64.so.2 (the ELF interpreter) resolves.
for dir in bin sbin lib lib64; do ln -s "usr/$dir" "$root/$dir"; done
chmod 1777 "$root/tmp"

# The packages' files (not their directories), under /usr as the merged base has them.
dpkg-query -L $packages \
  | sed -E 's#^/(bin|sbin|lib|lib64)/#/usr/\1/#' \
  | grep -vE '^/usr/share/(lintian|man|info|locale|gcc|gdb)/|/gconv/|^/usr/sbin/tzconfig$' \
  | grep -vE '^/usr/share/doc/' > /tmp/rootfs-files
dpkg-query -L $packages | grep -E '^/usr/share/doc/[^/]+/copyright$' >> /tmp/rootfs-files
sort -u /tmp/rootfs-files | while IFS= read -r path; do
  # Files and symbolic links to files; a directory (or a link to one: /lib64) comes with its files.
  if { [ -e "$path" ] || [ -L "$path" ]; } && [ ! -d "$path" ]; then printf '%s\n' "$path"; fi
done > /tmp/rootfs-copy
xargs -d '\n' cp -a --parents -t "$root" < /tmp/rootfs-copy
rm -f /tmp/rootfs-files /tmp/rootfs-copy
for pkg in $packages ca-certificates; do dpkg-query -s "$pkg" > "$root/var/lib/dpkg/status.d/$pkg"; done

# The CA bundle ca-certificates generates (its scripts stay out), the time zone, os-release, the
# loader's configuration and its cache for this root.
cp -a --parents /etc/ssl/certs/ca-certificates.crt /etc/localtime /usr/lib/os-release /etc/ld.so.conf "$root"
[ ! -d /etc/ld.so.conf.d ] || cp -a --parents /etc/ld.so.conf.d "$root"
[ ! -f /etc/timezone ] || cp -a --parents /etc/timezone "$root"
ln -s ../usr/lib/os-release "$root/etc/os-release"
ldconfig -r "$root"

printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' 'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' \
  'tokensmith:x:10001:10001:tokensmith:/home/tokensmith:/sbin/nologin' > "$root/etc/passwd"
printf '%s\n' 'root:x:0:' 'nobody:x:65534:' 'tokensmith:x:10001:' > "$root/etc/group"
printf '%s\n' 'passwd: files' 'group: files' 'hosts: files dns' > "$root/etc/nsswitch.conf"
chown 10001:10001 "$root/home/tokensmith"
chmod 0700 "$root/home/tokensmith"

cp -a /usr/local/bin/node "$root/usr/local/bin/node"
# Node.js needs nothing else: its OpenSSL, ICU and CA store are built in.
chroot "$root" /usr/local/bin/node -e 'console.log(`node ${process.version} runs in the root, as ${require("node:os").userInfo().username}`)'
