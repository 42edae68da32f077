package sshdtest

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestTraceCountsSessionCommands runs sshd under strace: after a mark, one
// session running `/bin/true; /bin/echo hi` starts the session's login
// shell (which may exec echo in place) and true, each listed with its
// argv; a Restart keeps counting in a new trace.
func TestTraceCountsSessionCommands(t *testing.T) {
	srv := Start(t, Options{Trace: true})
	known := filepath.Join(t.TempDir(), "known_hosts")
	srv.WriteKnownHosts(known)
	c, err := dial(t, srv, known)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	run(t, c, "true") // the connection's first session, before the mark

	mark := srv.Mark()
	if n := srv.StartedSince(mark).Count(); n != 0 {
		t.Fatalf("%d processes started right after the mark, want 0:\n%s", n, srv.StartedSince(mark))
	}
	if out := run(t, c, "/bin/true; /bin/echo hi"); out != "hi\n" {
		t.Fatalf("output %q", out)
	}
	st := srv.StartedSince(mark)
	var progs []string
	for _, p := range st.Processes {
		if a := p.Argv(); len(a) > 0 {
			progs = append(progs, filepath.Base(a[0]))
		} else {
			progs = append(progs, "(fork)")
		}
	}
	// sshd's session child becomes the login shell (sh -c ...), which
	// runs true and then execs echo in place or forks it: 3 processes at
	// most, the shell and true at least.
	got := strings.Join(progs, " ")
	if st.Count() < 2 || st.Count() > 3 || !strings.Contains(got, "true") {
		t.Fatalf("started %q, want the login shell, true and echo:\n%s", got, st)
	}
	s := st.String()
	for _, want := range []string{"processes started:", "/bin/true", "-c '/bin/true; /bin/echo hi'"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}

	// After a restart the new sshd is traced too.
	c.Close()
	srv.Restart()
	mark = srv.Mark()
	c2, err := dial(t, srv, known)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	run(t, c2, "/bin/true")
	if st := srv.StartedSince(mark); !strings.Contains(st.String(), "/bin/true") {
		t.Errorf("after Restart, /bin/true not seen:\n%s", st)
	}
}
