package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/relay-llm/relay/internal/configfile"
	"github.com/relay-llm/relay/openapi/client"
)

// conn is how the control-plane subcommands (apply, export, keys, token)
// reach a control plane: --url or RELAY_URL, --token or RELAY_ADMIN_TOKEN.
type conn struct {
	url, token string
}

func (c *conn) register(fs *flag.FlagSet) {
	// No env values as flag defaults: -h would print the token.
	fs.StringVar(&c.url, "url", "", "control plane URL (default $RELAY_URL, else "+configfile.DefaultURL+")")
	fs.StringVar(&c.token, "token", "", "admin token, sent as bearer (default $RELAY_ADMIN_TOKEN)")
}

func (c *conn) resolve(getenv func(string) string) {
	if c.url == "" {
		c.url = getenv("RELAY_URL")
	}
	if c.url == "" {
		c.url = configfile.DefaultURL
	}
	if c.token == "" {
		c.token = getenv("RELAY_ADMIN_TOKEN")
	}
}

// admin returns a client that acts with the admin token.
func (c *conn) admin(getenv func(string) string) (*client.ClientWithResponses, error) {
	c.resolve(getenv)
	if c.token == "" {
		return nil, fmt.Errorf("no admin token: pass --token or set RELAY_ADMIN_TOKEN")
	}
	return configfile.NewClient(c.url, c.token, nil)
}

// usageFunc prints a subcommand's synopsis and its flags.
func usageFunc(fs *flag.FlagSet, w io.Writer, synopsis string) func() {
	return func() {
		fmt.Fprintln(w, "usage: "+strings.TrimSpace(synopsis))
		fmt.Fprintln(w)
		fs.PrintDefaults()
	}
}

// parseFlags parses args; help reports -h (the usage is printed: the
// command ends without error).
func parseFlags(fs *flag.FlagSet, args []string) (help bool, err error) {
	err = fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return false, noArgs(fs)
}

// noArgs refuses positional arguments left after the flags.
func noArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
