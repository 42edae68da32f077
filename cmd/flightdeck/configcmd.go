package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/sessions/config"
)

// configPath is the root's --config flag: "" means config.DefaultPath().
var configPath string

// loadConfig loads --config (which must exist) or the default file (which
// may be missing: built-ins only).
func loadConfig() (*config.Config, error) {
	if configPath != "" {
		c, err := config.Load(configPath)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		return c, nil
	}
	c, err := config.LoadDefault()
	if err != nil {
		return nil, fmt.Errorf("config: %w (check it with: flightdeck config check)", err)
	}
	return c, nil
}

func configFile() (string, error) {
	if configPath != "" {
		return configPath, nil
	}
	return config.DefaultPath()
}

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		RunE:  runGroup,
		Short: "Write or check the configuration file (hosts, env profiles, launch presets)",
		Long: `The configuration lives in $XDG_CONFIG_HOME/flightdeck/config.toml
(~/.config/flightdeck/config.toml); --config FILE selects another for any
command. It names hosts (SSH target, log directory, repository, working
directory), environment profiles (sets of NCCL_* and other variables) and
launch presets (server command templates with {model}, {tp}, {port}).
Built in: profiles none, nccl-ll-ring, nccl-debug; presets sglang,
sglang-eagle3, vllm, sim.`,
	}
	var force bool
	initCmd := &cobra.Command{
		Use:   "init",
		Short: "Write a commented example configuration",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, err := configFile()
			if err != nil {
				return err
			}
			if _, err := os.Stat(path); err == nil && !force {
				return fmt.Errorf("%s exists; pass --force to overwrite it", path)
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(path, []byte(config.Example), 0o644); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "wrote", path)
			return nil
		},
	}
	initCmd.Flags().BoolVar(&force, "force", false, "overwrite an existing file")
	checkCmd := &cobra.Command{
		Use:   "check",
		Short: "Validate the configuration; print every problem with its line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, err := configFile()
			if err != nil {
				return err
			}
			c, err := config.Load(path)
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%s does not exist (flightdeck config init writes an example)", path)
			}
			if err != nil {
				for _, e := range flatten(err) {
					fmt.Fprintln(cmd.ErrOrStderr(), e)
				}
				return exitCode(1)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (%d hosts, %d env profiles, %d launch presets)\n",
				path, len(c.Hosts), len(c.Profiles), len(c.Presets))
			return nil
		},
	}
	cmd.AddCommand(initCmd, checkCmd)
	return cmd
}

// flatten lists the errors of an errors.Join (one per line).
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}
