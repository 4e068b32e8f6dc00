package main

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-dev/sluice/s2api"
)

// tokenFlags are the daemon's address and the caller's token (the global --endpoint and
// --token), for the token commands.
type tokenFlags struct{ g *globals }

func (f *tokenFlags) client() (*apiClient, error) { return newAPIClient(f.g.endpoint, f.g.token) }

func newTokenCmd(g *globals) *cobra.Command {
	f := &tokenFlags{g: g}
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Issue, list and revoke a daemon's access tokens",
		Long: `Issue, list and revoke the access tokens of a daemon (sluice serve --auth-token), through
its S2 API (/v1/access-tokens): --endpoint names the daemon, --token (better: SLUICE_TOKEN,
since flags show in ps) is the caller's token, the root token or a token allowed to manage
tokens. A token can issue only scopes within its own. See docs/access.md.`,
	}
	cmd.AddCommand(newTokenIssueCmd(f), newTokenListCmd(f), newTokenRevokeCmd(f))
	return cmd
}

// parseSet reads a resource set flag: exact:NAME, prefix:PREFIX or none.
func parseSet(flag, v string) (*s2api.ResourceSet, error) {
	kind, name, ok := strings.Cut(v, ":")
	switch {
	case v == "" || v == "none":
		return nil, nil
	case ok && kind == "exact":
		return &s2api.ResourceSet{Exact: &name}, nil
	case ok && kind == "prefix":
		return &s2api.ResourceSet{Prefix: &name}, nil
	}
	return nil, fmt.Errorf("invalid value %q for --%s: want exact:NAME, prefix:PREFIX (prefix: for all) or none", v, flag)
}

// parseOpGroups reads --op-groups: comma-separated GROUP=PERMS, GROUP one of account, basin,
// stream and PERMS one of r, w, rw.
func parseOpGroups(v string) (*s2api.PermittedOperationGroups, error) {
	if v == "" {
		return nil, nil
	}
	g := &s2api.PermittedOperationGroups{}
	for _, part := range strings.Split(v, ",") {
		name, perms, _ := strings.Cut(strings.TrimSpace(part), "=")
		var rw s2api.ReadWritePermissions
		switch perms {
		case "r":
			rw.Read = true
		case "w":
			rw.Write = true
		case "rw", "wr":
			rw.Read, rw.Write = true, true
		default:
			return nil, fmt.Errorf("invalid value %q for --op-groups: %q wants GROUP=r, =w or =rw", v, part)
		}
		switch name {
		case "account":
			g.Account = &rw
		case "basin":
			g.Basin = &rw
		case "stream":
			g.Stream = &rw
		default:
			return nil, fmt.Errorf("invalid value %q for --op-groups: unknown group %q (account, basin or stream)", v, name)
		}
	}
	return g, nil
}

func newTokenIssueCmd(f *tokenFlags) *cobra.Command {
	var basins, streams, tokens, groups, expiresAt string
	var ops []string
	var expiresIn time.Duration
	var autoPrefix bool
	cmd := &cobra.Command{
		Use:   "issue ID",
		Short: "Issue an access token and print it",
		Long: `Issue an access token with id ID and print the daemon's answer, {"access_token":TOKEN}:
the token is shown this once (the daemon keeps only a hash of it).

The scope: --basins, --streams and --access-tokens are each exact:NAME, prefix:PREFIX
("prefix:" for all) or none (the default: nothing); --op-groups grants groups
(account=r,basin=rw,stream=w) and --ops single operations by S2's names (append, read,
trim, fence, check-tail, create-stream, list-streams, issue-access-token, ...). The token
may do the operations of both, on the resources of the sets.`,
		Example: `  # a service that appends to its own streams
  sluice token issue service/orders --endpoint http://127.0.0.1:8080 \
    --basins exact:orders-prod --streams prefix:orders/ --ops append,create-stream
  # a dashboard that reads everything
  sluice token issue dashboard --basins prefix: --streams prefix: --op-groups account=r,basin=r,stream=r`,
		Args: exactArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var errs []string
			var req s2api.IssueAccessTokenRequest
			req.ID = args[0]
			for _, s := range []struct {
				flag, v string
				dst     **s2api.ResourceSet
			}{{"basins", basins, &req.Scope.Basins}, {"streams", streams, &req.Scope.Streams}, {"access-tokens", tokens, &req.Scope.AccessTokens}} {
				set, err := parseSet(s.flag, s.v)
				if err != nil {
					errs = append(errs, err.Error())
				}
				*s.dst = set
			}
			g, err := parseOpGroups(groups)
			if err != nil {
				errs = append(errs, err.Error())
			}
			req.Scope.OpGroups = g
			for _, op := range ops {
				if op = strings.TrimSpace(op); op != "" {
					req.Scope.Ops = append(req.Scope.Ops, op)
				}
			}
			switch {
			case expiresAt != "" && expiresIn != 0:
				errs = append(errs, "--expires-at and --expires-in exclude each other")
			case expiresAt != "":
				t, err := time.Parse(time.RFC3339, expiresAt)
				if err != nil {
					errs = append(errs, fmt.Sprintf("invalid value %q for --expires-at: want RFC 3339, e.g. 2027-01-01T00:00:00Z", expiresAt))
				}
				req.ExpiresAt = &t
			case expiresIn < 0:
				errs = append(errs, fmt.Sprintf("invalid value %v for --expires-in: must be positive", expiresIn))
			case expiresIn > 0:
				t := time.Now().Add(expiresIn).UTC().Truncate(time.Second)
				req.ExpiresAt = &t
			}
			if autoPrefix {
				req.AutoPrefixStreams = &autoPrefix
			}
			if len(errs) > 0 {
				return fmt.Errorf("%s", strings.Join(errs, "; "))
			}
			c, err := f.client()
			if err != nil {
				return err
			}
			var resp s2api.IssueAccessTokenResponse
			if err := c.do(cmd.Context(), "POST", "/access-tokens", req, &resp); err != nil {
				return err
			}
			return newJSONOut(cmd.OutOrStdout()).write(resp)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&basins, "basins", "", "basins allowed: exact:NAME, prefix:PREFIX or none")
	fl.StringVar(&streams, "streams", "", "streams allowed: exact:NAME, prefix:PREFIX or none")
	fl.StringVar(&tokens, "access-tokens", "", "token ids it may manage: exact:ID, prefix:PREFIX or none")
	fl.StringVar(&groups, "op-groups", "", "operation groups granted: account=r|w|rw,basin=...,stream=...")
	fl.StringSliceVar(&ops, "ops", nil, "single operations granted, comma-separated (S2's names)")
	fl.StringVar(&expiresAt, "expires-at", "", "expiry, RFC 3339 (default: the caller's token's)")
	fl.DurationVar(&expiresIn, "expires-in", 0, "expiry from now, e.g. 720h (default: the caller's token's)")
	fl.BoolVar(&autoPrefix, "auto-prefix-streams", false, "make stream names relative to the --streams prefix")
	return cmd
}

func newTokenListCmd(f *tokenFlags) *cobra.Command {
	var prefix, startAfter string
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List access tokens",
		Long: `List the access tokens the caller's token may see, one JSON object per line in id order,
as the daemon's GET /v1/access-tokens lists them: {"id","expires_at","auto_prefix_streams",
"scope"}. Secrets are never listed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 0 {
				return fmt.Errorf("invalid value %d for --limit: must be >= 0 (0 = all)", limit)
			}
			c, err := f.client()
			if err != nil {
				return err
			}
			out := newJSONOut(cmd.OutOrStdout())
			for n := 0; limit == 0 || n < limit; {
				page := s2api.MaxListLimit
				if limit > 0 {
					page = min(page, limit-n)
				}
				q := url.Values{"prefix": {prefix}, "start_after": {startAfter}, "limit": {fmt.Sprint(page)}}
				var resp s2api.ListAccessTokensResponse
				if err := c.do(cmd.Context(), "GET", "/access-tokens?"+q.Encode(), nil, &resp); err != nil {
					return err
				}
				for _, info := range resp.AccessTokens {
					if err := out.writeNoFlush(info); err != nil {
						return err
					}
					n++
				}
				if !resp.HasMore || len(resp.AccessTokens) == 0 {
					break
				}
				startAfter = resp.AccessTokens[len(resp.AccessTokens)-1].ID
			}
			return out.flush()
		},
	}
	cmd.Flags().StringVar(&prefix, "prefix", "", "list only tokens whose ids start with this")
	cmd.Flags().StringVar(&startAfter, "start-after", "", "list only tokens whose ids sort after this")
	cmd.Flags().IntVar(&limit, "limit", 0, "list at most this many tokens (0 = all)")
	return cmd
}

func newTokenRevokeCmd(f *tokenFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke an access token",
		Long: `Revoke the access token ID: every daemon on the store refuses it within seconds (at once
the one called), and ends its live sessions. Revoking an unknown id succeeds.`,
		Args: exactArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			return c.do(cmd.Context(), "DELETE", "/access-tokens/"+url.PathEscape(args[0]), nil, nil)
		},
	}
}
