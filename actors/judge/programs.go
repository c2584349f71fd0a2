package judge

import (
	"slices"
	"strings"
)

// program is what the judge knows of one program, under every name in
// names (as canonical folds them): how to judge its arguments and what it
// does with its input and output. programTable is the one place this
// knowledge lives; the rules it reports are in rules.go.
type program struct {
	names []string
	// run judges one call of it; nil: nothing in its arguments is judged
	// beyond the files it reads.
	run  handler
	kind kind
	// download: what it prints may come from the network.
	download bool
	// noRead: its operands are not files it reads (no finding for a
	// private key named as an operand).
	noRead bool
	// guess: a command name that is a glob or partly unknown is judged as
	// each of these names it may be.
	guess bool
	// sql: a database client, whose standard input is judged as SQL.
	sql bool
	// notSQL: its name reads as SQL (truncate): its words are not judged
	// as SQL.
	notSQL bool
	// interp is how an interpreter takes its code; nil for other programs.
	interp *interp
}

// programTable lists the programs the judge knows, by what they are.
func programTable() []program {
	return []program{
		// wrappers
		{names: []string{"sudo"}, run: hSudo, kind: kindWrapper, guess: true},
		{names: []string{"sudoedit"}, run: hSudoedit},
		{names: []string{"doas"}, run: wrapper("uC", nil), kind: kindWrapper},
		{names: []string{"pkexec"}, run: wrapper("", []string{"--user"}), kind: kindWrapper},
		{names: []string{"run0"}, run: wrapper("uDgM", []string{"--user", "--group", "--chdir", "--property", "--setenv", "--unit", "--description", "--slice", "--nice", "--machine", "--background"}), kind: kindWrapper},
		{names: []string{"env"}, run: hEnv, kind: kindWrapper, guess: true},
		{names: []string{"command"}, run: hCommand, kind: kindWrapper},
		{names: []string{"builtin", "nohup", "setsid", "unbuffer", "eatmydata", "torsocks", "catchsegv", "busybox", "toybox", "firejail", "then", "do", "else"}, run: wrapper("", nil), kind: kindWrapper},
		{names: []string{"exec"}, run: wrapper("a", nil), kind: kindWrapper},
		{names: []string{"nice"}, run: wrapper("n", []string{"--adjustment"}), kind: kindWrapper},
		{names: []string{"ionice"}, run: hIonice, kind: kindWrapper},
		{names: []string{"timeout"}, run: skipWrapper("sk", []string{"--signal", "--kill-after"}, 1), kind: kindWrapper},
		{names: []string{"stdbuf"}, run: wrapper("ioe", []string{"--input", "--output", "--error"}), kind: kindWrapper},
		{names: []string{"time"}, run: wrapper("fo", []string{"--format", "--output"}), kind: kindWrapper},
		{names: []string{"fakeroot"}, run: wrapper("lsib", []string{"--lib", "--faked", "-s", "-i"}), kind: kindWrapper},
		{names: []string{"proxychains"}, run: wrapper("f", nil), kind: kindWrapper},
		{names: []string{"chrt"}, run: hChrt, kind: kindWrapper},
		{names: []string{"taskset"}, run: hTaskset, kind: kindWrapper},
		{names: []string{"chroot"}, run: skipWrapper("", []string{"--userspec", "--groups"}, 1), kind: kindWrapper},
		{names: []string{"strace", "ltrace"}, run: hTrace, kind: kindWrapper},
		{names: []string{"systemd-run"}, run: wrapper("pEMHu", []string{"--property", "--setenv", "--unit", "--description", "--slice", "--uid", "--gid", "--working-directory", "--machine", "--host", "--nice", "--service-type", "--on-active", "--on-boot", "--on-startup", "--on-unit-active", "--on-unit-inactive", "--on-calendar", "--timer-property", "--path-property", "--socket-property"}), kind: kindWrapper},
		{names: []string{"nsenter"}, run: wrapper("tSG", []string{"--target", "--setuid", "--setgid"}), kind: kindWrapper},
		{names: []string{"unshare"}, run: wrapper("SGR", []string{"--setuid", "--setgid", "--root", "--wd"}), kind: kindWrapper},
		{names: []string{"flock"}, run: hFlock, kind: kindWrapper},
		{names: []string{"watch"}, run: hWatch, kind: kindWrapper},
		{names: []string{"script"}, run: hScript, kind: kindWrapper},
		{names: []string{"su", "runuser"}, run: hSu, kind: kindWrapper, guess: true},
		{names: []string{"sg"}, run: hSg, kind: kindWrapper},
		{names: []string{"xargs"}, run: hXargs, kind: kindWrapper, guess: true},
		{names: []string{"ssh"}, run: hSSH, kind: kindWrapper, download: true, noRead: true, guess: true},
		{names: []string{"at", "batch"}, run: hAt, kind: kindWrapper},
		// shells and code
		{names: []string{"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "yash", "posh", "rbash", "ksh93", "pdksh"}, run: hShell, kind: kindWrapper, guess: true},
		{names: []string{"eval"}, run: hEval, kind: kindWrapper, guess: true},
		{names: []string{"source", "."}, run: hSource, kind: kindWrapper, guess: true},
		{names: []string{"alias"}, run: hAlias, kind: kindWrapper},
		{names: []string{"trap"}, run: hTrap, kind: kindWrapper},
		{names: []string{"set"}, run: hSet, kind: kindText},
		{names: []string{"shift"}, run: hShift, kind: kindText},
		{names: []string{"parallel"}, run: hParallel, kind: kindWrapper},
		{names: []string{"vim", "vi", "nvim", "ex", "view", "vimdiff"}, run: hVim, kind: kindText},
		{names: []string{"python"}, run: hInterpreter, guess: true, interp: &interp{lang: langPython, code: "c", value: "WX", module: "m", stdin: true}},
		{names: []string{"perl"}, run: hInterpreter, guess: true, interp: &interp{lang: langPerl, code: "eE", value: "IM", attached: "l0FCdDxim", inPlace: true, stdin: true}},
		{names: []string{"ruby", "irb"}, run: hInterpreter, interp: &interp{lang: langRuby, code: "e", value: "rICEF", attached: "xWTi0", inPlace: true, stdin: true}},
		{names: []string{"node", "bun"}, run: hInterpreter, interp: &interp{lang: langNode, code: "ep", longCode: []string{"--eval", "--print"}, value: "r", longVal: []string{"--require", "--import", "--loader"}, stdin: true}},
		{names: []string{"deno"}, run: hInterpreter, interp: &interp{lang: langNode}},
		{names: []string{"php"}, run: hInterpreter, interp: &interp{lang: langPHP, code: "rBRE", value: "dcfz", stdin: true}},
		{names: []string{"lua"}, run: hInterpreter, interp: &interp{lang: langLua, code: "e", value: "l", stdin: true}},
		{names: []string{"awk"}, run: hInterpreter, interp: &interp{lang: langAwk, code: "e", longCode: []string{"--source"}, value: "fvF", longVal: []string{"--file", "--assign", "--field-separator"}}},
		{names: []string{"rscript", "osascript", "jshell"}, run: hInterpreter, interp: &interp{lang: langOther, code: "e"}},
		// shell state
		{names: []string{"cd", "pushd"}, run: hCd, kind: kindText},
		{names: []string{"popd"}, run: func(w *walker, c *call) data { c.sc.cwd = ""; return emptyData }, kind: kindText},
		{names: []string{"unset"}, run: hUnset, kind: kindText},
		{names: []string{"read", "mapfile", "readarray", "getopts"}, run: hRead, kind: kindText},
		{names: []string{"export", "declare", "typeset", "local", "readonly"}, run: hExport, kind: kindText},
		// files
		{names: []string{"rm"}, run: hRm, noRead: true, guess: true},
		{names: []string{"shred", "unlink"}, run: hShred, noRead: true, guess: true},
		{names: []string{"rmdir", "srm", "wipe"}, run: hShred},
		{names: []string{"mv"}, run: hMv, noRead: true, guess: true},
		{names: []string{"cp", "install"}, run: hCp, guess: true},
		{names: []string{"ln"}, run: hLn, noRead: true, guess: true},
		{names: []string{"rsync"}, run: hRsync, guess: true},
		{names: []string{"scp"}, run: hScp},
		{names: []string{"dd"}, run: hDD, guess: true},
		{names: []string{"tee"}, run: hTee, kind: kindText, guess: true},
		{names: []string{"truncate"}, run: hTruncate, guess: true, notSQL: true},
		{names: []string{"sed"}, run: hSed, kind: kindText, guess: true},
		{names: []string{"tar", "bsdtar", "gtar"}, run: hTar},
		{names: []string{"unzip"}, run: hUnzip},
		{names: []string{"chmod"}, run: hChmod, noRead: true, guess: true},
		{names: []string{"chown", "chgrp"}, run: hChown, noRead: true, guess: true},
		// network
		{names: []string{"curl"}, run: hCurl, download: true, guess: true},
		{names: []string{"wget"}, run: hWget, download: true, guess: true},
		{names: []string{"nc"}, run: hNc, download: true, guess: true},
		{names: []string{"socat"}, run: hSocat, download: true},
		// processes and the machine
		{names: []string{"kill"}, run: hKill, guess: true},
		{names: []string{"killall5"}, run: flagAll(ruleKillAll), guess: true},
		{names: []string{"pkill", "killall"}, run: flagAll(rulePkill), guess: true},
		{names: []string{"shutdown", "reboot", "halt", "poweroff"}, run: flagAll(ruleShutdown), guess: true},
		{names: []string{"init", "telinit"}, run: hInit, guess: true},
		{names: []string{"systemctl"}, run: hSystemctl, guess: true},
		{names: []string{"loginctl"}, run: hLoginctl},
		{names: []string{"kexec"}, run: hKexec},
		{names: []string{"service"}, run: hService, guess: true},
		{names: []string{"mkfs"}, run: flagAll(ruleMkfs), guess: true},
		{names: []string{"mkswap"}, run: hMkswap},
		{names: []string{"wipefs", "blkdiscard"}, run: hWipefs, guess: true},
		{names: []string{"fdisk", "sfdisk", "sgdisk", "gdisk", "parted", "cfdisk"}, run: hFdisk},
		{names: []string{"crontab"}, run: hCrontab, guess: true},
		{names: []string{"history"}, run: hHistory, kind: kindText},
		{names: []string{"git"}, run: hGit, kind: kindText, noRead: true, guess: true},
		{names: []string{"docker"}, run: hDocker, guess: true},
		{names: []string{"find"}, run: hFind, guess: true},
		// producers: what they print is known
		{names: []string{"echo"}, run: hEcho, kind: kindText, noRead: true},
		{names: []string{"printf"}, run: hPrintf, kind: kindText, noRead: true},
		{names: []string{"cat"}, run: hCat, kind: kindText},
		{names: []string{"base64", "base32"}, run: hBase64, kind: kindText, guess: true},
		{names: []string{"rev"}, run: hRev, kind: kindText},
		{names: []string{"xxd"}, run: hXxd, kind: kindText},
		{names: []string{"tr"}, run: hTr, kind: kindText},
		{names: []string{"gunzip", "zcat", "gzip"}, run: hGunzip, kind: kindText},
		{names: []string{"which"}, run: hWhich, kind: kindText, noRead: true},
		{names: []string{"type", "whereis"}, run: hWhich, kind: kindText},
		{names: []string{"dirname", "basename", "realpath", "readlink", "pwd"}, run: hPathname, kind: kindText},
		{names: []string{"true", "false", ":", "grep", "egrep", "fgrep", "rg", "ag", "ack", "less", "more", "head", "tail", "wc", "sort", "uniq", "cut", "man", "diff", "jq", "yq", "date", "sleep"}, kind: kindText},
		{names: []string{"test", "[", "ls", "touch", "mkdir"}, kind: kindText, noRead: true},
		// known only by what they print or read
		{names: []string{"fetch", "aria2c", "http", "https", "telnet", "ftp", "tftp", "lwp-request"}, download: true},
		{names: []string{"ssh-add", "ssh-keygen", "ssh-copy-id", "stat", "file", "du"}, noRead: true},
		{names: []string{"psql", "mysql", "mariadb", "sqlite3", "sqlite", "sqlcmd", "clickhouse-client", "clickhouse", "cockroach", "duckdb",
			"snowsql", "bq", "pgcli", "mycli", "litecli", "usql", "isql", "cqlsh"}, sql: true},
	}
}

// programs indexes programTable by name, and guessNames lists the names a
// glob command name is tried against, in table order. Both are filled once
// by init and only read afterwards. (The table is built by a function, not
// a variable's initializer, because its handlers judge commands by looking
// programs up: an initializer would refer to itself.)
var (
	programs   map[string]*program
	guessNames []string
)

func init() {
	table := programTable()
	programs = make(map[string]*program, 2*len(table))
	for i := range table {
		p := &table[i]
		for _, n := range p.names {
			if _, dup := programs[n]; dup {
				panic("judge: program " + n + " listed twice")
			}
			programs[n] = p
			if p.guess && !slices.Contains(guessNames, n) {
				guessNames = append(guessNames, n)
			}
		}
	}
}

// unknownProgram is any program the table does not list: its operands are
// judged as files it reads, its words as SQL.
var unknownProgram = &program{}

// programFor is what the judge knows of the program of canonical name
// name.
func programFor(name string) *program {
	if p := programs[name]; p != nil {
		return p
	}
	return unknownProgram
}

// canonical folds the versions and variants of a program into one name.
func canonical(name string) string {
	n := strings.ToLower(name)
	switch {
	case strings.HasPrefix(n, "python") || strings.HasPrefix(n, "pypy"):
		return "python"
	case strings.HasPrefix(n, "mkfs") || n == "mke2fs" || n == "mkdosfs" || n == "mkntfs" || n == "newfs" || n == "mkexfatfs":
		return "mkfs"
	case strings.HasPrefix(n, "perl"):
		return "perl"
	case strings.HasPrefix(n, "ruby"):
		return "ruby"
	case strings.HasPrefix(n, "lua"):
		return "lua"
	case strings.HasPrefix(n, "php"):
		return "php"
	case n == "nodejs":
		return "node"
	case n == "gawk" || n == "mawk" || n == "nawk":
		return "awk"
	case n == "proxychains4":
		return "proxychains"
	case n == "podman" || n == "nerdctl":
		return "docker"
	case n == "ncat" || n == "netcat" || n == "nc.openbsd" || n == "nc.traditional":
		return "nc"
	case n == "sudoedit":
		return "sudoedit"
	}
	return n
}
