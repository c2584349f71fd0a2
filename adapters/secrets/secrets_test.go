package secrets

import (
	"strings"
	"testing"
)

// Fake secrets of real shapes; none of them is or was a live key.
var hex64 = strings.Repeat("0123456789abcdef", 4)

// redactCorpus: each input holds one secret (the second field) that must
// be gone after Redact, with the text around it kept.
var redactCorpus = []struct{ name, secret, text string }{
	{"openai", "sk-abcdefghij1234567890ABCDEFGHIJ", "key: sk-abcdefghij1234567890ABCDEFGHIJ."},
	{"openai project", "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90", "OPENAI=sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90\n"},
	{"openai service account", "sk-svcacct-Zz99Yy88Xx77Ww66Vv55Uu44Tt33", "using sk-svcacct-Zz99Yy88Xx77Ww66Vv55Uu44Tt33 now"},
	{"anthropic", "sk-ant-api03-AbCdEf1234567890AbCdEf1234567890-XyZ_w", "x sk-ant-api03-AbCdEf1234567890AbCdEf1234567890-XyZ_w y"},
	{"openrouter", "sk-or-v1-" + hex64, "token sk-or-v1-" + hex64},
	{"aws access key", "AKIAIOSFODNN7EXAMPLE", "aws_access_key_id = AKIAIOSFODNN7EXAMPLE"},
	{"aws temporary key", "ASIAY34FZKBOKMUTVV7A", `"AccessKeyId": "ASIAY34FZKBOKMUTVV7A",`},
	{"aws secret (ini)", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"},
	{"aws secret (env)", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEZ", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEZ"},
	{"slack bot", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "SLACK xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"},
	{"slack user", "xoxp-123456789012-123456789012-123456789012-0123456789abcdef0123456789abcdef", "t=xoxp-123456789012-123456789012-123456789012-0123456789abcdef0123456789abcdef"},
	{"slack app", "xapp-1-A0123BCDEF-1234567890123-0123456789abcdef", "app token xapp-1-A0123BCDEF-1234567890123-0123456789abcdef ok"},
	{"slack webhook", "https://hooks.slack.com/services/T0ABCDEFG/B0ABCDEFG/AbCdEfGhIjKlMnOpQrStUvWx", "post to https://hooks.slack.com/services/T0ABCDEFG/B0ABCDEFG/AbCdEfGhIjKlMnOpQrStUvWx"},
	{"github classic", "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "remote: ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"},
	{"github oauth", "gho_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "gho_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"},
	{"github fine-grained", "github_pat_11ABCDEFG0123456789_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGhIjKlMnOp", "github_pat_11ABCDEFG0123456789_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGhIjKlMnOp"},
	{"gitlab", "glpat-AbCd1234EfGh5678IjKl", "GITLAB glpat-AbCd1234EfGh5678IjKl"},
	{"telegram bot", "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawQ", "bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawQ says"},
	{"bearer header", "eyJhbGciOiJIUzI1NiJ9_opaque_0123456789", "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9_opaque_0123456789"},
	{"basic auth", "dXNlcjpwYXNzd29yZDEyMw==", "Authorization: Basic dXNlcjpwYXNzd29yZDEyMw=="},
	{"pem rsa", "MIIEowIBAAKCAQEA7bq98tfa", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq98tfa\nAbCd==\n-----END RSA PRIVATE KEY-----\nafter"},
	{"pem openssh", "b3BlbnNzaC1rZXktdjEAAAAA", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"},
	{"pem cut short", "MHcCAQEEIBkg4LVWM9nuwNSk", "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk\n[… 2000 bytes of output elided …]"},
	{"pgp private", "lQOYBF0pMqgBCAC", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF0pMqgBCAC\n-----END PGP PRIVATE KEY BLOCK-----"},
	{"jwt", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "cookie=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U; path=/"},
	{"google", "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "key=AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q&q=x"},
	{"stripe", "sk_live_51AbCdEfGhIjKlMnOp", "stripe sk_live_51AbCdEfGhIjKlMnOp"},
	{"huggingface", "hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh", "HF hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh"},
	{"npm", "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "//registry.npmjs.org/:_authToken npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"},
	{"pypi", "pypi-AgEIcHlwaS5vcmcCJGE0YjY3ZjM0LTAwMDAtNDAwMC04MDAwLTAwMDAwMDAwMDAwMA", "password = pypi-AgEIcHlwaS5vcmcCJGE0YjY3ZjM0LTAwMDAtNDAwMC04MDAwLTAwMDAwMDAwMDAwMA"},
	{"groq", "gsk_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEf", "gsk_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEf"},
	{"xai", "xai-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEf", "xai-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEf"},
	{"sendgrid", "SG.AbCdEfGhIjKlMnOpQrStUv.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfG", "SG.AbCdEfGhIjKlMnOpQrStUv.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfG"},
	{"digitalocean", "dop_v1_" + hex64, "DO dop_v1_" + hex64},
	{"shopify", "shpat_0123456789abcdef0123456789abcdef", "shpat_0123456789abcdef0123456789abcdef"},
	{"discord bot", "MTA4NzY1NDMyMTA5ODc2NTQzMg.GaBcDe.AbCdEfGhIjKlMnOpQrStUvWxYz01234", "DISCORD MTA4NzY1NDMyMTA5ODc2NTQzMg.GaBcDe.AbCdEfGhIjKlMnOpQrStUvWxYz01234"},
	{"azure connection string", "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==", "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;EndpointSuffix=core.windows.net"},
	{"url password", "s3cr3tPass", "DATABASE_URL=postgres://app:s3cr3tPass@db.internal:5432/app"},
	{"env password", "hunter2hunter2", "export DB_PASSWORD=hunter2hunter2"},
	{"json client secret", "abcd1234efgh", `{"client_secret": "abcd1234efgh", "id": 3}`},
	{"yaml api key", "0123abcdef4567", "  api_key: 0123abcdef4567\n"},
	{"x-api-key header", "sekret-9f8e7d6c5b", "x-api-key: sekret-9f8e7d6c5b"},
	{"quoted password", "s3cr3t!pass", "PASSWORD='s3cr3t!pass'"},
	{"go short assignment", "abcd1234efgh", `apiKey := "abcd1234efgh"`},
	{"json password without digits", "correcthorse", `{"password": "correcthorse"}`},
}

// keepCorpus: text that looks a little like a secret and is not; Redact
// must leave it exactly as it is.
var keepCorpus = []string{
	"commit 3f786850e387550fdab836ed7e6dc881de23001b",
	"HEAD is now at 3f78685 fix the build",
	"session 123e4567-e89b-12d3-a456-426614174000 started",
	"sha256sum: " + hex64 + "  go.sum",
	"image@sha256:" + hex64,
	"echo SGVsbG8sIHdvcmxkISBUaGlzIGlzIGp1c3QgdGV4dC4= | base64 -d",
	`"integrity": "sha512-Jx0gr6Bf3tY7iZ1A8wW3/c0Cq8fZWw+5B1tq7t1Ww0ZkZk2Zq5x8m0b6s2h2Ff9n1w5qk1k3Q6x8c1Vb7w0Q=="`,
	"remote: https://octo@github.com/octo/repo.git",
	"GET https://example.com:8443/path?q=1&page=2",
	"git@github.com:octo/repo.git",
	"max_tokens: 4096",
	"token_count=123456",
	`api_key = os.environ["OPENAI_API_KEY"]`,
	"password = getpass.getpass()",
	"def get_token(self) -> str:\n    token: str = self.api_key",
	"pip install scikit-learn  # not sk-learn",
	"task-2024-abcdefghijklmnopqrstuvwx",
	"Bearer authentication is required for this endpoint",
	"Authorization: Bearer $TOKEN",
	"-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
	"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@host",
	"TOKENIZERS_PARALLELISM=false",
	"account 123456789012 in eu-west-1",
	"inet6 2001:0db8:85a3:0000:0000:8a2e:0370:7334/64",
	"2024-05-01T12:34:56Z INFO started",
	"github.com/hermes-go/hermes/adapters/secrets",
	"at MNetworkConnectionManagerImpl.handle.processIncomingRequestWithRetry",
	`secret_santa = "alice"`,
	"PWD=/home/user/project",
	"the password is stored in Vault at secret/data/db",
	"accessToken: string;",
	"token := tokens[0]",
	"export GITHUB_TOKEN=$(gh auth token)",
	`{"type": "token", "max_tokens": 1024}`,
}

func TestRedactCorpus(t *testing.T) {
	var s *Set
	for _, c := range redactCorpus {
		got := s.Redact(c.text)
		if strings.Contains(got, c.secret) || !strings.Contains(got, "[REDACTED:") {
			t.Errorf("%s: not redacted: %q", c.name, got)
		}
		if kind, ok := Find(c.text); !ok {
			t.Errorf("%s: Find missed it", c.name)
		} else if kind == "" {
			t.Errorf("%s: no kind", c.name)
		}
	}
	for _, text := range keepCorpus {
		if got := s.Redact(text); got != text {
			t.Errorf("over-redaction:\n  in:  %q\n  out: %q", text, got)
		}
		if kind, ok := Find(text); ok {
			t.Errorf("Find flags %q as %s", text, kind)
		}
	}
	t.Logf("%d secrets redacted, %d look-alikes kept", len(redactCorpus), len(keepCorpus))
}

func TestKnownValues(t *testing.T) {
	env := []string{"HOME=/root", "MY_SERVICE_TOKEN=plainvaluewithoutshape", "SHORT_TOKEN=abc", "EDITOR=vim",
		"CUSTOM=sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90"}
	s := New(env, nil, map[string]string{"api_key (config.yaml)": "config-held-value-42"})
	got := s.Redact("a plainvaluewithoutshape b config-held-value-42 c abc vim")
	want := "a [REDACTED:MY_SERVICE_TOKEN] b [REDACTED:api_key (config.yaml)] c abc vim"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	// A shaped value held under an innocent name is known by its variable.
	if got := s.Redact("k=sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90"); got != "k=[REDACTED:CUSTOM]" {
		t.Fatal(got)
	}
}

func TestSecretNames(t *testing.T) {
	secret := []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "TELEGRAM_BOT_TOKEN",
		"SLACK_APP_TOKEN", "DISCORD_BOT_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "AWS_SESSION_TOKEN", "GITHUB_TOKEN",
		"GH_TOKEN", "API_SERVER_KEY", "WEBHOOK_SECRET", "DB_PASSWORD", "PGPASSWORD", "MYSQL_PWD", "HF_TOKEN",
		"GOOGLE_API_KEY", "STRIPE_KEY", "client_secret", "NPM_CONFIG__AUTH", "HERMES_RPC_TOKEN", "GPG_PASSPHRASE", "GH_PAT",
		"SESSION_COOKIE", "GOOGLE_APPLICATION_CREDENTIALS", "AZURE_OPENAI_API_KEY", "JWT_PRIVATE_KEY_PEM"}
	plain := []string{"PATH", "HOME", "PWD", "OLDPWD", "SSH_AUTH_SOCK", "TOKENIZERS_PARALLELISM", "GIT_ASKPASS", "LANG", "TERM",
		"EDITOR", "GOPATH", "KEYBOARD_LAYOUT", "HERMES_HOME", "PYTHONPATH", "MONKEY", "PASSENGER_APP_ENV"}
	for _, n := range secret {
		if !SecretName(n) {
			t.Errorf("%s not seen as secret", n)
		}
	}
	for _, n := range plain {
		if SecretName(n) {
			t.Errorf("%s seen as secret", n)
		}
	}
}

func TestEnvScrub(t *testing.T) {
	environ := []string{"PATH=/usr/bin", "HOME=/home/u", "OPENAI_API_KEY=sk-test-0123456789abcdefghij", "GITHUB_TOKEN=ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
		"SSH_AUTH_SOCK=/tmp/agent.sock", "INNOCENT=sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90", "COPY=sk-test-0123456789abcdefghij",
		"HEADER=Bearer sk-test-0123456789abcdefghij", "DATABASE_URL=postgres://app:s3cr3tPass@db:5432/app", "LANG=C.UTF-8",
		"MYAPP_TOKEN=keep-me-1234", "MYAPP_URL=https://example.com"}
	s := New(environ, []string{"MYAPP_*"}, nil)
	got := strings.Join(s.Env(environ), "\n")
	want := "PATH=/usr/bin\nHOME=/home/u\nSSH_AUTH_SOCK=/tmp/agent.sock\nLANG=C.UTF-8\nMYAPP_TOKEN=keep-me-1234\nMYAPP_URL=https://example.com"
	if got != want {
		t.Fatalf("scrubbed env:\n%s\nwant:\n%s", got, want)
	}
	// A passed-through secret still never reaches the model.
	if out := s.Redact("MYAPP_TOKEN=keep-me-1234"); strings.Contains(out, "keep-me-1234") {
		t.Fatal(out)
	}
}

func TestKebabAfterSkIsNotAKey(t *testing.T) {
	for _, text := range []string{"sk-this-is-a-long-kebab-case-name", "desk-abcdefghijklmnopqrstuvwxyz"} {
		if _, ok := Find(text); ok {
			t.Errorf("%q flagged", text)
		}
	}
	if _, ok := Find("sk-abcdefghijklmnopqrstuvwx"); !ok {
		t.Error("a key without digits missed")
	}
}

// TestOffsetsSurviveUnicode: letters whose lower case is longer or
// shorter (İ, K) do not shift what is redacted.
func TestOffsetsSurviveUnicode(t *testing.T) {
	text := "İİİ KKK\napi_key: 0123abcdef4567 İ\nok"
	if got := (*Set)(nil).Redact(text); got != "İİİ KKK\napi_key: [REDACTED:assigned-secret] İ\nok" {
		t.Fatalf("%q", got)
	}
}

// BenchmarkRedact: what redaction adds to a 100 KB tool result, for
// ordinary output (the baseline: no hint of a secret) and for output
// where every line looks like an assignment of a secret.
func BenchmarkRedact(b *testing.B) {
	s := New([]string{"A_TOKEN=abcdefgh12345", "B_SECRET=zyxwvuts9876"}, nil, nil)
	for _, c := range []struct{ name, line string }{
		{"plain", "commit 3f786850e387550fdab836ed7e6dc881de23001b Author: Ann <ann@example.com> 2024-05-01\n"},
		{"assignments", "commit 3f786850e387550fdab836ed7e6dc881de23001b token_count=12 api_key=os.environ[k]\n"},
	} {
		text := strings.Repeat(c.line, 100_000/len(c.line))
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				s.Redact(text)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/100KB")
		})
	}
}
