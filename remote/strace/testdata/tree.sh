#!/bin/sh
# The fixture behind remote/strace/testdata/tree.strace: run as ./fixture.sh
# under strace.Args with env -i PATH=/usr/local/bin:/usr/bin:/bin (Debian 12).
git --version >/dev/null
nosuchcmd 2>/dev/null
x=$(echo sub | cat)
sh -c 'exec env LC_ALL=C dd if=/dev/zero bs=1 count=4 2>/dev/null' >/dev/null
sleep 5 & kill -9 $!
sh -c 'exit 7'
/usr/bin/python3 -c 'import threading,subprocess; t=threading.Thread(target=lambda: subprocess.run(["/bin/true"])); t.start(); t.join()'
(setsid sh -c 'sleep 0.2' </dev/null >/dev/null 2>&1 &)
/bin/echo "a\"b\\c
d" "$(printf '\001\351')" >/dev/null
sleep 0.3
