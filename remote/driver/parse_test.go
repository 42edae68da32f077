package driver

import (
	"errors"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestParseSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      snapshot
		err       string
	}{
		{"absent", "result read\nnow 1700000000\nversion absent\n", snapshot{Now: 1700000000, Version: verAbsent}, ""},
		{"wrote", "result ok\nnow 1700000047\nversion 1700000000 4294967295 12\n{\"token\":\"a\"}\n",
			snapshot{Wrote: true, Now: 1700000047, Version: "1700000000 4294967295 12", MTime: 1700000000, Content: []byte("{\"token\":\"a\"}\n")}, ""},
		{"conflict empty file", "result conflict\nnow 5\nversion 4 4294967295 0\n", snapshot{Now: 5, Version: "4 4294967295 0", MTime: 4, Content: []byte{}}, ""},
		{"empty", "", snapshot{}, `no "result" line`},
		{"motd first", "Welcome!\nresult ok\n", snapshot{}, `"Welcome!" where a "result" line was due`},
		{"bad result", "result maybe\nnow 1\nversion absent\n", snapshot{}, "result"},
		{"bad clock", "result read\nnow -3\nversion absent\n", snapshot{}, "host clock"},
		{"bad version", "result read\nnow 3\nversion 1 2\n", snapshot{}, "version"},
		{"version spaces", "result read\nnow 3\nversion 1  2 3\n", snapshot{}, "version"},
		{"negative mtime", "result read\nnow 3\nversion -1 2 3\n", snapshot{}, "version"},
		{"content after absent", "result read\nnow 3\nversion absent\nx", snapshot{}, "content after"},
		{"too much content", "result read\nnow 3\nversion 1 2 3\n" + strings.Repeat("x", MaxFileBytes+2), snapshot{}, "bytes of content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseSnapshot([]byte(tc.out))
			if tc.err != "" {
				if err == nil || !errors.Is(err, errOutput) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Wrote != tc.want.Wrote || got.Now != tc.want.Now || got.Version != tc.want.Version || got.MTime != tc.want.MTime || string(got.Content) != string(tc.want.Content) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	s, _ := parseSnapshot([]byte("result read\nnow 100\nversion 53 1 1\nx"))
	if s.Age() != 47*time.Second {
		t.Errorf("age %s", s.Age())
	}
	if s.MTime, s.Now = 200, 100; s.Age() != 0 { // mtime in the future: a clock step
		t.Errorf("age %s", s.Age())
	}
}

func TestParseInfo(t *testing.T) {
	s := snapshot{Now: 10, Version: "5 1 1", MTime: 5}
	s.Content = []byte(`{"user":"alice","machine":"laptop","pid":4123,"since":"2026-11-29T10:02:03Z","journal":"/j.jsonl","token":"ab12","heartbeat":"2000-01-01T00:00:00Z","extra":1}`)
	i, err := parseInfo(s)
	if err != nil {
		t.Fatal(err)
	}
	want := event.DriverInfo{User: "alice", Machine: "laptop", PID: 4123, Since: time.Date(2026, 11, 29, 10, 2, 3, 0, time.UTC), Journal: "/j.jsonl", Token: "ab12", Heartbeat: time.Unix(5, 0)}
	if i != want {
		t.Errorf("got %+v, want %+v", i, want)
	}
	for _, bad := range []string{``, `null`, `[]`, `{"token":""}`, `{"token":"AB"}`, `{"token":"ab","pid":-1}`, `{"token":"ab","pid":"1"}`, strings.Repeat(" ", MaxFileBytes+1)} {
		s.Content = []byte(bad)
		if _, err := parseInfo(s); !errors.Is(err, ErrGarbled) {
			t.Errorf("%.40q: err %v, want ErrGarbled", bad, err)
		}
	}
}

func TestNotes(t *testing.T) {
	since := time.Date(2026, 11, 29, 10, 2, 3, 0, time.Local)
	a := event.DriverInfo{User: "alice", Machine: "laptop", PID: 4123, Since: since, Token: "a"}
	for _, tc := range []struct{ got, want string }{
		{noteStale(a, false, 47*time.Second), "took the stale lock of alice@laptop (pid 4123): no heartbeat for 47s"},
		{noteStale(event.DriverInfo{}, true, 3*time.Hour), "took the stale lock (a garbled lock file): no heartbeat for 3h"},
		{noteStale(event.DriverInfo{User: "x"}, false, 5*time.Minute), "took the stale lock of x@?: no heartbeat for 5m"},
		{noteTakeOver(a, false), "took over from alice@laptop (pid 4123, driving since 10:02:03)"},
		{noteTakeOver(event.DriverInfo{Machine: "m"}, false), "took over from ?@m (driving since ?)"},
		{noteLost(a), "alice@laptop (pid 4123) took over at 10:02:03"},
		{noteQuit(a), "alice@laptop (pid 4123) quit: you drive now"},
		{noteQuit(event.DriverInfo{}), "the lock was released: you drive now"},
		{noteNewHolder(event.DriverInfo{}, a), "alice@laptop drives since 10:02:03"},
		{(event.DriverInfo{}).Who(), "an unknown cockpit"},
	} {
		if tc.got != tc.want {
			t.Errorf("%q, want %q", tc.got, tc.want)
		}
	}
}

func TestSelf(t *testing.T) {
	i := Self()
	if err := checkMe(i); err != nil || i.PID <= 0 || i.Machine == "" || len(i.Token) != 32 {
		t.Errorf("Self() = %+v: %v", i, err)
	}
	if NewToken() == NewToken() {
		t.Error("tokens repeat")
	}
}

func FuzzParseSnapshot(f *testing.F) {
	f.Add([]byte("result ok\nnow 1700000047\nversion 1700000000 4294967295 12\n{\"token\":\"a\"}\n"))
	f.Add([]byte("result read\nnow 1\nversion absent\n"))
	f.Add([]byte("result conflict\nnow 9\nversion 9 9 9\n{\"user\":\"\\u001b[2J\",\"token\":\"ff\"}"))
	f.Fuzz(func(t *testing.T, out []byte) {
		s, err := parseSnapshot(out)
		if err != nil {
			return
		}
		if s.Age() < 0 || len(s.Content) > MaxFileBytes+1 {
			t.Fatalf("snapshot %+v", s)
		}
		i, err := parseInfo(s)
		if err != nil {
			if !errors.Is(err, ErrGarbled) {
				t.Fatalf("error %v does not wrap ErrGarbled", err)
			}
			return
		}
		if !validToken(i.Token) || i.PID < 0 || len(i.User) > MaxNameBytes || len(i.Machine) > MaxNameBytes || len(i.Journal) > MaxJournalBytes {
			t.Fatalf("info %+v", i)
		}
		for _, x := range []string{i.User, i.Machine, i.Journal, i.Who()} {
			if !utf8.ValidString(x) || strings.ContainsAny(x, "\x1b\x07\r\n\x00\u009b\u202e") {
				t.Fatalf("unsafe text %q", x)
			}
		}
	})
}
