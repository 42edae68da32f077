package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/driver"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/tui"
	"github.com/flightdeck-dev/flightdeck/tui/replay"
)

// followFlags are the options of `flightdeck follow`.
type followFlags struct {
	ssh     sshFlags
	dir     string
	lockDir string
	color   colorFlags
}

func newFollowCmd() *cobra.Command {
	var f followFlags
	cmd := &cobra.Command{
		Use:   "follow [JOURNAL|HOST]",
		Short: "Watch another cockpit's session live and read-only, from its journal as it is written",
		Long: `follow shows the cockpit of a session being recorded elsewhere: the journal is
read from its start, then followed as the driving cockpit writes it (within
about a second). It is a replay kept at the live end: your own terminal
size, focus and scrolling (tab, x, c, /, ?), no keys that act (they say
"follow: read-only"). The header says who drives.

  flightdeck follow              the newest journal being written on this
                                 machine (a pair on one jump box or GPU host)
  flightdeck follow JOURNAL      a journal file
  flightdeck follow HOST         the live journal of the cockpit driving HOST,
                                 found through its driver lock, streamed over
                                 SSH (same SSH options as connect)

The timeline at the bottom says LIVE (and "no new events for 12s" when the
writer is quiet). left, [ and t go back as in replay; G or end returns to
the live end; space pauses there. q quits.`,
		Example: `  flightdeck follow
  flightdeck follow ~/.local/state/flightdeck/journals/gpu-box/2026-11-29-101500-session.jsonl
  flightdeck follow gpu-box`,
		Args: gitArgs(cobra.MaximumNArgs(1)),
		RunE: journalRunE(func(cmd *cobra.Command, args []string) error {
			arg := ""
			if len(args) == 1 {
				arg = args[0]
			}
			return runFollow(cmd.Context(), arg, f)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "dir", "", "journals directory searched without an argument (default $XDG_STATE_HOME/flightdeck/journals)")
	fl.StringVar(&f.lockDir, "lock-dir", "", "directory of the driver lock on HOST (default: the host's log_dir in the config, else ~/.flightdeck/logs, next to the server's pidfile)")
	addSSHFlags(fl, &f.ssh, false)
	addColorFlags(fl, &f.color)
	cmd.SetFlagErrorFunc(usageError)
	return cmd
}

// runFollow follows what arg names: nothing (the newest live journal
// under the journals directory), a journal file, or a host.
func runFollow(ctx context.Context, arg string, f followFlags) error {
	if arg == "" {
		dir, err := journalDir(f.dir)
		if err != nil {
			return err
		}
		path, others, err := newestLiveJournal(dir)
		if err != nil {
			return err
		}
		if len(others) > 0 {
			fmt.Fprintf(os.Stderr, "flightdeck: following %s (also being written: %s)\n", path, strings.Join(others, ", "))
		}
		return followFile(ctx, path, f)
	}
	if path, ok, err := journalFileArg(arg, f.dir); err != nil {
		return err
	} else if ok {
		return followFile(ctx, path, f)
	}
	if strings.ContainsRune(arg, '/') || strings.HasSuffix(arg, ".jsonl") {
		// A path, not a host: say so rather than dial it.
		return refusedf("no journal at %s (flightdeck journal ls lists them)", arg)
	}
	return followHost(ctx, arg, f)
}

// journalFileArg reports whether arg names a file: a path, or a path
// relative to the journals directory. A directory given as a path (with a
// '/') is refused; a bare name that is a directory (the journals of host
// "gpu-box" are in .../journals/gpu-box) is left to be a host's name.
func journalFileArg(arg, dir string) (string, bool, error) {
	cands := []string{arg}
	if !filepath.IsAbs(arg) {
		if d, err := journalDir(dir); err == nil {
			cands = append(cands, filepath.Join(d, arg))
		}
	}
	for i, p := range cands {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			if i == 0 && strings.ContainsRune(arg, '/') {
				return "", false, refusedf("%s is a directory, not a journal (see flightdeck journal ls --dir %s)", p, p)
			}
			continue
		}
		return p, true, nil
	}
	return "", false, nil
}

// newestLiveJournal returns the most recently modified journal under dir
// that a cockpit is writing now, and the others being written. None is a
// refusal saying how to name one.
func newestLiveJournal(dir string) (string, []string, error) {
	files, _ := listJournalFiles(dir)
	var live []string
	var newest time.Time
	best, bestDrives := -1, false
	for _, p := range files {
		if !journal.Live(p) {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		live = append(live, p)
		// A pair on one box writes several journals at once: the
		// driving cockpit's is the one to follow, then the newest.
		drives := lastDriverRole(p) == event.RoleDriving
		if best < 0 || drives && !bestDrives || drives == bestDrives && fi.ModTime().After(newest) {
			best, newest, bestDrives = len(live)-1, fi.ModTime(), drives
		}
	}
	if best < 0 {
		return "", nil, refusedf("no journal is being written under %s: name one (flightdeck follow FILE; see flightdeck journal ls) or the host a cockpit drives (flightdeck follow HOST)", dir)
	}
	path := live[best]
	others := append(live[:best:best], live[best+1:]...)
	return path, others, nil
}

// followFile runs the follower on the local journal at path.
func followFile(ctx context.Context, path string, f followFlags) error {
	j, err := journal.Open(path)
	if err != nil {
		return err
	}
	defer j.Close()
	if !journal.Live(path) {
		fmt.Fprintf(os.Stderr, "flightdeck: %s is not being written now (no cockpit holds its lock): following it anyway\n", path)
	}
	if err := needTerminal(); err != nil {
		return err
	}
	return runFollower(ctx, j, f)
}

// runFollower opens the follow screen on src until the user quits.
func runFollower(ctx context.Context, src replay.Source, f followFlags) error {
	r := replay.New(src, tui.Options{Color: f.color.Mode()}, replay.Options{Follow: true})
	return replay.Run(ctx, r)
}

// followHost finds the live journal of the cockpit driving target through
// its driver lock, streams it into a local cache file and follows that.
func followHost(ctx context.Context, target string, f followFlags) error {
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	hc := cfg.Host(target)
	host, err := openHost(ctx, hc.Target, f.ssh)
	if err != nil {
		return err
	}
	defer host.Close()
	// The lock is where the cockpits put it: next to the server's
	// pidfile, in the host's log_dir of the config unless --lock-dir.
	lockDir := f.lockDir
	if lockDir == "" {
		lockDir = hc.LogDir
	}
	info, err := drivenJournal(ctx, host, lockDir)
	if err != nil {
		return err
	}
	if err := needTerminal(); err != nil {
		return err
	}
	dir, err := followCacheDir()
	if err != nil {
		return err
	}
	cache, err := newCacheFile(dir, host.Name(), info.Journal)
	if err != nil {
		return err
	}
	defer os.Remove(cache.Name())
	defer cache.Close()

	sctx, stop := context.WithCancel(ctx)
	s := &hostStream{host: host, remotePath: info.Journal, local: cache}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.run(sctx)
	}()
	defer func() {
		stop()
		wg.Wait()
	}()
	fmt.Fprintf(os.Stderr, "flightdeck: following %s's session on %s (driving since %s): %s\n",
		sanitize.String(info.Who()), host.Name(), info.Since.Local().Format("15:04:05"), sanitize.String(info.Journal))
	if err := s.waitHeader(ctx, 30*time.Second); err != nil {
		return err
	}
	j, err := journal.Open(cache.Name())
	if err != nil {
		return fmt.Errorf("journal %s on %s: %w", sanitize.String(info.Journal), host.Name(), err)
	}
	defer j.Close()
	return runFollower(ctx, &streamedJournal{Journal: j, s: s}, f)
}

// drivenJournal reads the driver lock on host and returns its holder,
// refusing in a sentence a host nobody drives or whose holder records no
// journal, and checking that the journal can be read.
func drivenJournal(ctx context.Context, host remote.Host, lockDir string) (event.DriverInfo, error) {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	info, held, err := driver.Read(rctx, host, lockDir)
	switch {
	case err != nil:
		return info, fmt.Errorf("reading the driver lock on %s: %w", host.Name(), err)
	case info.Token == "" && info.User == "" && info.Machine == "":
		where := lockDir
		if where == "" {
			where = server.DefaultLogDir
		}
		return info, refusedf("%s is not driven: no cockpit holds a driver lock in %s, so there is no live journal to follow (a lock elsewhere: --lock-dir DIR, or log_dir in the config's [hosts.NAME]; or name a journal file: flightdeck follow FILE)", host.Name(), sanitize.String(where))
	case !held:
		return info, refusedf("nobody drives %s now: the lock of %s has had no heartbeat since %s (its journal, %s, is finished: copy it and use flightdeck replay)",
			host.Name(), sanitize.String(info.Who()), info.Heartbeat.Local().Format("15:04:05"), sanitize.String(info.Journal))
	case info.Journal == "":
		return info, refusedf("%s is driven by %s, whose cockpit records no journal: there is nothing to follow", host.Name(), sanitize.String(info.Who()))
	}
	q, err := remote.Quote(info.Journal)
	if err == nil {
		_, err = host.Run(rctx, "test -f "+q+" && test -r "+q, nil)
	}
	var ee *remote.ExitError
	switch {
	case errors.As(err, &ee):
		return info, refusedf("the journal of %s on %s, %s, is missing or not readable by this login", sanitize.String(info.Who()), host.Name(), sanitize.String(info.Journal))
	case err != nil:
		return info, fmt.Errorf("checking the journal %s on %s: %w", sanitize.String(info.Journal), host.Name(), err)
	}
	return info, nil
}

// followCacheDir is where streamed journals are kept while followed:
// $XDG_CACHE_HOME/flightdeck/follow (an absolute XDG_CACHE_HOME only), else
// ~/.cache/flightdeck/follow.
func followCacheDir() (string, error) {
	if x := os.Getenv("XDG_CACHE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "flightdeck", "follow"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return "", fmt.Errorf("follow cache directory: no XDG_CACHE_HOME and no home directory (%v)", err)
	}
	return filepath.Join(home, ".cache", "flightdeck", "follow"), nil
}

// newCacheFile creates this follower's copy of the remote journal: its own
// file (two followers on one machine never share one), removed at exit.
func newCacheFile(dir, host, remotePath string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("follow cache: %w", err)
	}
	base := strings.TrimSuffix(journal.SafeName(filepath.Base(remotePath)), ".jsonl")
	f, err := os.CreateTemp(dir, journal.SafeName(host)+"-"+base+"-*.jsonl")
	if err != nil {
		return nil, fmt.Errorf("follow cache: %w", err)
	}
	return f, nil
}

// hostStream copies a journal on a host into a local file as it grows:
// `tail -c +OFFSET -F -s 0.25 -- PATH` over SSH; after a dropped connection it
// starts again from the local file's size, so no byte is lost or copied
// twice. When tail says anything on stderr (the file was truncated,
// replaced or removed: its bytes no longer continue the copy) the stream
// stops with that as its error.
type hostStream struct {
	host       remote.Host
	remotePath string
	local      *os.File // written only by run

	mu  sync.Mutex
	err error
}

// Err is why the stream stopped for good; nil while it runs (or
// reconnects).
func (s *hostStream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *hostStream) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
}

// run streams until ctx ends or the stream fails (Err).
func (s *hostStream) run(ctx context.Context) {
	for ctx.Err() == nil && s.Err() == nil {
		fi, err := s.local.Stat()
		if err != nil {
			s.fail(fmt.Errorf("follow cache: %w", err))
			return
		}
		// -s: a tail without inotify polls every 250 ms, not every second.
		cmd, err := remote.Command("tail", "-c", "+"+strconv.FormatInt(fi.Size()+1, 10), "-F", "-s", "0.25", "--", s.remotePath)
		if err != nil {
			s.fail(err)
			return
		}
		p, err := s.host.Start(ctx, cmd)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, remote.ErrDisconnected) {
				s.fail(fmt.Errorf("streaming the journal from %s: %w", s.host.Name(), err))
				return
			}
			s.pause(ctx) // reconnecting
			continue
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(p.Stderr())
			for sc.Scan() {
				if line := strings.TrimSpace(sc.Text()); line != "" && tailFatal(strings.ReplaceAll(line, s.remotePath, "")) {
					s.fail(fmt.Errorf("the journal on %s changed under the follower: %s", s.host.Name(), sanitize.String(line)))
					p.Close()
				}
			}
		}()
		_, cerr := io.Copy(s.local, p.Stdout())
		werr := p.Wait()
		p.Close()
		wg.Wait()
		var pe *os.PathError
		switch {
		case ctx.Err() != nil || s.Err() != nil:
			return
		case errors.As(cerr, &pe):
			s.fail(fmt.Errorf("follow cache: %w", cerr))
			return
		case errors.Is(werr, remote.ErrDisconnected):
			s.pause(ctx)
			continue // resume from the local size
		case werr != nil:
			s.fail(fmt.Errorf("streaming the journal from %s: %w", s.host.Name(), werr))
			return
		default:
			s.fail(fmt.Errorf("streaming the journal from %s: tail exited", s.host.Name()))
			return
		}
	}
}

// pause waits a little before a retry (the host's calls wait for it to
// reconnect; this only keeps a fast failure from spinning).
func (s *hostStream) pause(ctx context.Context) {
	t := time.NewTimer(200 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// waitHeader waits until the local copy holds the journal's header line
// (the screen opens on it), the stream fails, ctx ends or d passes.
func (s *hostStream) waitHeader(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(d)
	buf := make([]byte, 64<<10)
	for {
		n, _ := s.local.ReadAt(buf, 0)
		if bytes.IndexByte(buf[:n], '\n') >= 0 || n == len(buf) {
			return nil
		}
		if err := s.Err(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the journal %s on %s: no header line after %v (is it empty?)", sanitize.String(s.remotePath), s.host.Name(), d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// streamedJournal is the local copy of a streamed journal as the follower
// reads it: Refresh fails once the stream has (the screen says why).
type streamedJournal struct {
	*journal.Journal
	s *hostStream
}

// Refresh is journal.Journal's, or the stream's error once it stopped:
// what tail wrote after the file changed under it (a truncated file is
// output again from its start) must not be read as new events.
func (j *streamedJournal) Refresh() (int, error) {
	if err := j.s.Err(); err != nil {
		return 0, err
	}
	return j.Journal.Refresh()
}

// tailFatal reports whether a line tail -F wrote on stderr (with the
// file's path taken out, which could hold any word) says the file was cut,
// replaced or lost: the copy can no longer follow it. Notices
// such as "inotify resources exhausted" or "reverting to polling" (tail
// goes on, polling) are not.
func tailFatal(line string) bool {
	for _, s := range []string{"truncated", "replaced", "has become inaccessible", "has appeared", "cannot open", "No such file"} {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

// lastDriverRole is the role in the last "driver" event of the journal at
// path (a cockpit journals its role only when it changes, so the event
// can be anywhere in the file); RoleNone when there is none. It reads the
// file once, line by line, decoding only the lines of that kind.
func lastDriverRole(path string) event.DriverRole {
	f, err := os.Open(path)
	if err != nil {
		return event.RoleNone
	}
	defer f.Close()
	role := event.RoleNone
	r := bufio.NewReaderSize(f, 1<<16)
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A line longer than the buffer (a big sample): skip the rest.
			for err == bufio.ErrBufferFull {
				_, err = r.ReadSlice('\n')
			}
			continue
		}
		if bytes.Contains(line, []byte(`,"driver",`)) {
			// [t,"driver",{...}]: the JSON codec's line for the kind.
			var rec []json.RawMessage
			var kind string
			var st event.DriverState
			if json.Unmarshal(line, &rec) == nil && len(rec) == 3 && json.Unmarshal(rec[1], &kind) == nil && kind == "driver" &&
				json.Unmarshal(rec[2], &st) == nil {
				role = st.Role
			}
		}
		if err != nil {
			return role
		}
	}
}
