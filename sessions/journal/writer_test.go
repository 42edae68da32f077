package journal

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

func TestCreateModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "flightdeck", "journals", "gpu-box")
	path := filepath.Join(dir, "s.jsonl")
	w, err := Create(path, event.SessionHeader{Created: t0, Host: "gpu-box"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("journal mode %v, want 0600", st.Mode().Perm())
	}
	for d := dir; d != filepath.Dir(filepath.Dir(filepath.Dir(dir))); d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o700 {
			t.Errorf("directory %s mode %v, want 0700", d, st.Mode().Perm())
		}
	}
	b, _ := os.ReadFile(path)
	if !bytes.HasPrefix(b, []byte(`{"format":"flightdeck-journal","version":2,"created":"2026-11-29T21:58:07.123457Z"`)) || !bytes.HasSuffix(b, []byte("}\n")) {
		t.Errorf("header line %q", b)
	}
	if _, err := Create(path, event.SessionHeader{}); !errors.Is(err, fs.ErrExist) && !isLocked(err) {
		t.Errorf("second Create: %v", err)
	}
}

func isLocked(err error) bool {
	var le *LockedError
	return errors.As(err, &le)
}

func TestCreateExisting(t *testing.T) {
	path, w := createJournal(t)
	w.Close()
	if _, err := Create(path, event.SessionHeader{}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create over a closed journal: %v, want fs.ErrExist", err)
	}
	if _, err := os.Stat(lockPath(path)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused Create left its lock file: %v", err)
	}
}

func TestSecondWriterRefused(t *testing.T) {
	path, w := createJournal(t)
	_, err := Append(path, event.SessionHeader{})
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("second writer: %v, want a *LockedError", err)
	}
	want := "journal " + path + " is being written by flightdeck pid " + strconv.Itoa(os.Getpid()) + " (user "
	if !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), ", since ") {
		t.Errorf("message %q, want it to start %q and give the time", err, want)
	}
	if le.PID != os.Getpid() || le.Since.IsZero() {
		t.Errorf("locked error %+v", le)
	}
	if !Live(path) {
		t.Error("Live while written: false")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if Live(path) {
		t.Error("Live after the writer closed: true")
	}
	w2, err := Append(path, event.SessionHeader{})
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	w2.Close()
}

func TestStaleLockFileIsReused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	// A writer killed with -9 leaves its lock file, without the flock.
	if err := os.WriteFile(lockPath(path), []byte(`{"pid":999999,"user":"gone","since":"2026-11-29T00:00:00Z"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := Create(path, event.SessionHeader{Created: t0})
	if err != nil {
		t.Fatalf("stale lock file: %v", err)
	}
	w.Close()
}

// fullDisk is a file that accepts only room more bytes, then ENOSPC.
type fullDisk struct {
	room int
	out  bytes.Buffer
	sync int
}

func (f *fullDisk) Write(b []byte) (int, error) {
	if len(b) <= f.room {
		f.room -= len(b)
		return f.out.Write(b)
	}
	n := f.room
	f.out.Write(b[:n])
	f.room = 0
	return n, &fs.PathError{Op: "write", Path: "j.jsonl", Err: syscall.ENOSPC}
}
func (f *fullDisk) Sync() error  { f.sync++; return nil }
func (f *fullDisk) Close() error { return nil }

func TestFullDiskKeepsBytes(t *testing.T) {
	_, w := createJournal(t)
	defer w.Close()
	real := w.f
	disk := &fullDisk{room: 50}
	w.f = disk
	var want bytes.Buffer
	for i := range 5 {
		e := event.Event{At: t0.Add(time.Duration(i) * time.Second), Data: event.TokRate{TokPerSec: 1000 + float64(i), Ranks: 2}}
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	want.Write(w.buf)
	err := w.Flush(true)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("flush on a full disk: %v", err)
	}
	st := w.Status()
	if !strings.Contains(st.Err, "no space left on device") || st.Pending != want.Len()-50 || st.Bytes == 0 {
		t.Errorf("status on a full disk: %+v", st)
	}
	// More events while the disk is full: kept after the unwritten rest.
	e := event.Event{At: t0.Add(9 * time.Second), Data: event.Note{Text: "disk full?"}}
	if err := w.Write(e); err != nil {
		t.Fatal(err)
	}
	want.Write(w.buf[len(w.buf)-(w.Status().Pending-(want.Len()-50)):])
	if err := w.Flush(false); err == nil {
		t.Fatal("flush with no room succeeded")
	}
	disk.room = 1 << 20 // space freed
	if err := w.Flush(true); err != nil {
		t.Fatalf("flush after space came back: %v", err)
	}
	if st := w.Status(); st.Err != "" || st.Pending != 0 || st.Dropped != 0 {
		t.Errorf("status after recovery: %+v", st)
	}
	if got := disk.out.String(); got != want.String() {
		t.Errorf("written bytes differ:\n got %q\nwant %q", got, want.String())
	}
	w.f = real
}

func TestFullDiskDropsBeyondCap(t *testing.T) {
	_, w := createJournal(t)
	defer w.Close()
	real := w.f
	defer func() { w.f = real }()
	w.f = &fullDisk{}
	big := event.Note{Text: strings.Repeat("x", 1<<20)}
	for i := range MaxPending>>20 + 3 {
		if err := w.Write(event.Event{At: t0.Add(time.Duration(i)), Data: big}); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush(false)
	st := w.Status()
	if st.Dropped < 2 || st.Pending < MaxPending || st.Err == "" {
		t.Errorf("status beyond the cap: dropped %d pending %d err %q", st.Dropped, st.Pending, st.Err)
	}
	// A sample dropped forces the next one to be a keyframe.
	w.Write(event.Event{At: t0, Data: testSample(t0, 0, 2)})
	if w.enc.gpu.has {
		t.Errorf("a dropped gpu-sample left the keyframe state")
	}
}

func TestAppendCutsTornTail(t *testing.T) {
	path := writeJournal(t, roundTripEvents()[:6])
	b, _ := os.ReadFile(path)
	torn := append(bytes.Clone(b), `[99,"note",{"text":"cut he`...)
	if err := os.WriteFile(path, torn, 0o600); err != nil {
		t.Fatal(err)
	}
	next := event.SessionHeader{Created: t0.Add(99 * time.Second), Flightdeck: "v9", Host: "gpu-box", User: "ana", Hostname: "laptop", PID: 77}
	w, err := Append(path, next)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(event.Event{At: t0.Add(100 * time.Second), Data: event.Note{Text: "after"}}); err != nil {
		t.Fatal(err)
	}
	s := testSample(t0.Add(101*time.Second), 1, 2)
	if err := w.Write(event.Event{At: s.At, Data: s}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.HasPrefix(after, b) || !bytes.Contains(after[len(b):], []byte(`[100,"note",{"text":"after"}]`)) {
		t.Errorf("appended file:\n%s", after[len(b):])
	}
	got := readAll(t, path)
	if n := len(got); n != 9 {
		t.Fatalf("%d events after append, want 9 (6, the session, the note, the sample)", n)
	}
	// The new session is recorded first, with its header, at its time.
	sess, ok := got[6].Data.(event.Session)
	if !ok || !got[6].At.Equal(next.Created.Round(time.Microsecond)) || sess.PID != 77 || sess.Host != "gpu-box" || sess.Format != FormatName || sess.Version != FormatVersion {
		t.Errorf("first appended event %T %+v at %v, want the session's header at %v", got[6].Data, got[6].Data, got[6].At, next.Created)
	}
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	marks := j.Marks()
	j.Close()
	if m := marks[len(marks)-2]; m.Kind != event.KindSession || m.T != 99*time.Second || m.Text != "flightdeck v9 pid 77 (ana@laptop)" {
		t.Errorf("the session's mark %+v", m)
	}
	if d := diffPayload(s, got[8].Data); d != "" {
		t.Errorf("sample after append (must be a keyframe): %s", d)
	}
}

func TestAppendRefuses(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"text":    "hello\nworld\n",
		"torn":    `{"format":"flightdeck-journal","version":1`,
		"other":   `{"format":"asciicast","version":2,"created":"2026-11-29T00:00:00Z"}` + "\n",
		"newer":   `{"format":"flightdeck-journal","version":3,"created":"2026-11-29T00:00:00Z"}` + "\n",
		"nocreat": `{"format":"flightdeck-journal","version":1}` + "\n",
	} {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(content), 0o600)
		_, err := Append(path, event.SessionHeader{})
		_, oerr := Open(path)
		for _, e := range []error{err, oerr} {
			var ve *VersionError
			switch {
			case name == "newer":
				if !errors.As(e, &ve) || ve.Got != 3 || ve.Max != 2 || !strings.Contains(e.Error(), "version 3") || !strings.Contains(e.Error(), "up to 2") {
					t.Errorf("%s: %v", name, e)
				}
			case !errors.Is(e, ErrNotJournal):
				t.Errorf("%s: %v, want ErrNotJournal", name, e)
			}
		}
	}
}

// An empty file (touch, mktemp) given to Append is a new journal: the
// header is written, with no session event, and the file is made 0600.
func TestAppendEmptyFileIsNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := Append(path, event.SessionHeader{Created: t0, Host: "gpu-box", PID: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(event.Event{At: t0.Add(time.Second), Data: event.Note{Text: "first"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if h := j.Header(); h.Host != "gpu-box" || h.PID != 5 || !h.Created.Equal(t0.Round(time.Microsecond)) {
		t.Errorf("header %+v", h)
	}
	got := readAll(t, path)
	if len(got) != 1 || got[0].Data.(event.Note).Text != "first" {
		t.Errorf("events %+v, want the one note", got)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
}
