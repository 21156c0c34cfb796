// scripted-host: an SSH endpoint that stands in for a host in the cli tier, so that `pulumi up`
// runs with the real engine and the real command provider without a VM. It runs nothing: each
// command's stdin (the step's script) is read whole, recorded, and answered by a script of
// outcomes kept in a directory:
//
//	DIR/ports  written at start: the ports it listens on (127.0.0.1), one per line, one per host
//	           it stands in for (scripted-host DIR [HOSTS], default 1)
//	DIR/fail   read per command: lines of text; a script containing one fails (exit 1, stderr
//	           "scripted failure: <line>"); otherwise it prints its answer and exits 0
//	DIR/answer read per command: a JSON object {text: stdout}; a script containing the text
//	           prints that stdout, any other "{}"
//	DIR/log    appended per command: one JSON line {"port": the port it came in on, "line": the
//	           script's zg-validator.py line, else its "# nodefleet:" line, else its first line,
//	           "script": the file under DIR/scripts holding it whole, "status": the exit status}
//	DIR/connections  rewritten whenever an SSH connection opens (its handshake done) or closes: one line per port,
//	           "PORT OPEN PEAK", the connections open now and the most open at once so far
//	DIR/homes/PORT   the SSH user's home of the host on PORT, as its SFTP subsystem serves it
//	           (CopyToRemote writes there; relative paths start there, as OpenSSH's sftp-server's do)
//
// A step that runs a script of its host's bundle sends a runner naming the script's sha256
// ("nodefleet_run=DIGEST", components/hosts/tools.ts): the host takes the script that file of
// DIR/homes/PORT/.nodefleet/tools holds (as sh would run it) and answers that; a missing or
// altered file fails the step as the runner does.
//
// It accepts any client key: it listens on loopback for one test and is never a real host.
package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

var logMu sync.Mutex

// Connections open now and the most at once, per port (DIR/connections).
var (
	connMu   sync.Mutex
	connOpen = map[int]int{}
	connPeak = map[int]int{}
)

func countConnection(dir string, port, delta int) {
	connMu.Lock()
	defer connMu.Unlock()
	connOpen[port] += delta
	if connOpen[port] > connPeak[port] {
		connPeak[port] = connOpen[port]
	}
	ports := make([]int, 0, len(connPeak))
	for p := range connPeak {
		ports = append(ports, p)
	}
	sort.Ints(ports)
	var b strings.Builder
	for _, p := range ports {
		fmt.Fprintf(&b, "%d %d %d\n", p, connOpen[p], connPeak[p])
	}
	tmp := filepath.Join(dir, "connections.tmp")
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err == nil {
		os.Rename(tmp, filepath.Join(dir, "connections"))
	}
}

func main() {
	hosts := 1
	if len(os.Args) == 3 {
		if _, err := fmt.Sscan(os.Args[2], &hosts); err != nil || hosts < 1 {
			log.Fatalf("HOSTS: %q is not a positive number", os.Args[2])
		}
	} else if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: scripted-host DIR [HOSTS]")
		os.Exit(2)
	}
	dir := os.Args[1]
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(key)
	if err != nil {
		log.Fatal(err)
	}
	config := &ssh.ServerConfig{
		PublicKeyCallback: func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) { return nil, nil },
	}
	config.AddHostKey(signer)
	var ports []string
	for i := 0; i < hosts; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			log.Fatal(err)
		}
		ports = append(ports, fmt.Sprint(ln.Addr().(*net.TCPAddr).Port))
		go accept(ln, config, dir)
	}
	if err := os.WriteFile(filepath.Join(dir, "ports.tmp"), []byte(strings.Join(ports, "\n")+"\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "ports.tmp"), filepath.Join(dir, "ports")); err != nil {
		log.Fatal(err)
	}
	select {}
}

func accept(ln net.Listener, config *ssh.ServerConfig, dir string) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go serve(conn, config, dir)
	}
}

func serve(conn net.Conn, config *ssh.ServerConfig, dir string) {
	port := conn.LocalAddr().(*net.TCPAddr).Port
	defer conn.Close()
	_, chans, reqs, err := ssh.NewServerConn(conn, config)
	if err != nil {
		return
	}
	// Counted from the handshake: a step's client closes its connection before the engine starts
	// the next step, but this side sees that close when its reader goroutine runs, which on a
	// loaded machine came after the next step's accept (a third connection counted on two chains).
	countConnection(dir, port, 1)
	defer countConnection(dir, port, -1)
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, requests, err := nc.Accept()
		if err != nil {
			continue
		}
		go session(ch, requests, dir, port)
	}
}

func session(ch ssh.Channel, requests <-chan *ssh.Request, dir string, port int) {
	defer ch.Close()
	for req := range requests {
		if req.Type == "subsystem" {
			var sub struct{ Name string }
			if ssh.Unmarshal(req.Payload, &sub) != nil || sub.Name != "sftp" {
				req.Reply(false, nil)
				continue
			}
			req.Reply(true, nil)
			serveSftp(ch, dir, port)
			return
		}
		if req.Type != "exec" {
			req.Reply(req.Type == "env" || req.Type == "pty-req", nil)
			continue
		}
		req.Reply(true, nil)
		script, _ := io.ReadAll(ch)
		var status uint32
		if body, ok := bundled(string(script), dir, port); ok {
			status = answer(ch, body, dir, port)
		} else {
			fmt.Fprintln(ch.Stderr(), body)
			status = 1
			record(dir, port, string(script), status)
		}
		ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
		return
	}
}

// serveSftp serves the SFTP subsystem on one session, rooted in the host's home DIR/homes/PORT.
func serveSftp(ch ssh.Channel, dir string, port int) {
	home := filepath.Join(dir, "homes", fmt.Sprint(port))
	if err := os.MkdirAll(home, 0o700); err != nil {
		log.Print(err)
		return
	}
	server, err := sftp.NewServer(ch, sftp.WithServerWorkingDirectory(home))
	if err != nil {
		log.Print(err)
		return
	}
	if err := server.Serve(); err != nil && err != io.EOF {
		log.Print(err)
	}
	server.Close()
	ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{0}))
}

var runner = regexp.MustCompile(`(?m)^nodefleet_run=([0-9a-f]{64})$`)

// bundled is the script a step runs: the file of the host's bundle its runner names, or the
// script itself. For a missing or altered file: false, and the runner's complaint.
func bundled(script, dir string, port int) (string, bool) {
	m := runner.FindStringSubmatch(script)
	if m == nil {
		return script, true
	}
	body, err := os.ReadFile(filepath.Join(dir, "homes", fmt.Sprint(port), ".nodefleet", "tools", m[1]))
	if err != nil || fmt.Sprintf("%x", sha256.Sum256(body)) != m[1] {
		return "nodefleet: the bundled script " + m[1] + " is missing or altered on this host", false
	}
	return string(body), true
}

// answer writes the scripted outcome of one script to the channel and returns its exit status.
func answer(ch ssh.Channel, script, dir string, port int) uint32 {
	var status uint32
	if fail, err := os.ReadFile(filepath.Join(dir, "fail")); err == nil {
		for _, l := range strings.Split(string(fail), "\n") {
			if l = strings.TrimSpace(l); l != "" && strings.Contains(script, l) {
				fmt.Fprintf(ch.Stderr(), "scripted failure: %s\n", l)
				status = 1
				break
			}
		}
	}
	if status == 0 {
		out := "{}"
		if raw, err := os.ReadFile(filepath.Join(dir, "answer")); err == nil {
			answers := map[string]string{}
			if err := json.Unmarshal(raw, &answers); err != nil {
				log.Printf("DIR/answer: %v", err)
			}
			for text, stdout := range answers {
				if strings.Contains(script, text) {
					out = stdout
				}
			}
		}
		fmt.Fprintln(ch, out)
	}
	record(dir, port, script, status)
	return status
}

// summary is the script's zg-validator.py line (a step of the validator tool), else the line
// that says what it is ("# nodefleet: ..."), else its first line.
func summary(script string) string {
	lines := strings.Split(script, "\n")
	for _, prefix := range []string{"zg-validator.py", "# nodefleet:"} {
		for _, l := range lines {
			if strings.Contains(l, prefix) {
				return strings.TrimSpace(l)
			}
		}
	}
	return strings.TrimSpace(lines[0])
}

var scripts int

func record(dir string, port int, script string, status uint32) {
	logMu.Lock()
	defer logMu.Unlock()
	scripts++
	name := filepath.Join(dir, "scripts", fmt.Sprintf("%05d.sh", scripts))
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err == nil {
		if err := os.WriteFile(name, []byte(script), 0o600); err != nil {
			log.Print(err)
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, "log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		log.Print(err)
		return
	}
	defer f.Close()
	b, _ := json.Marshal(map[string]any{"port": port, "line": summary(script), "script": name, "status": status})
	f.Write(append(b, '\n'))
}
