// pulumi-resource-command — nodefleet's STAND-IN for the Pulumi command provider (remote.Command).
//
// The real provider (github.com/pulumi/pulumi-command, provider module, v1.2.1) is not served by
// the Go module proxy this project can reach, so the offline toolchain builds this stand-in for
// the dev stack and the tests. It implements only `command:remote:Command`, the one resource
// nodefleet uses, with the semantics of @pulumi/command 1.2.1 as documented:
//
//   - inputs: connection {host, port=22, user=root, password, privateKey, privateKeyPassword,
//     agentSocketPath, hostKey, dialErrorLimit=10, perDialTimeout=15}, create, update, delete,
//     stdin, environment (sent with SSH "env" requests: sshd drops names it does not AcceptEnv),
//     triggers, logging (stdout | stderr | stdoutAndStderr | none), addPreviousOutputInEnv=true;
//     outputs: the inputs plus stdout and stderr;
//   - create runs once; a change of triggers replaces the resource (create the new one, then
//     run the old one's delete); any other input change runs `update`, or `create` when no
//     update is set; nothing runs when nothing changed; delete runs the delete stored in state
//     with the stored connection; PULUMI_COMMAND_STDOUT/STDERR carry the previous outputs;
//   - a command that exits non-zero fails the step and nothing is recorded, so the next
//     `pulumi up` runs it again;
//   - without hostKey any host key is accepted (as the real provider does);
//   - command output is streamed to the Pulumi log line by line unless logging says otherwise.
//
// Not implemented (refused with a clear error): proxy connections, command:local:*, copy
// resources. Production installs the real provider: `pulumi plugin install resource command 1.2.1`.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
	"nodefleet.local/toolchain/standins/internal/pluginmain"
)

// Version is the @pulumi/command release whose semantics this stand-in follows.
var Version = "1.2.1"

const remoteCommand = "command:remote:Command"

type provider struct {
	pulumirpc.UnimplementedResourceProviderServer
	engine pulumirpc.EngineClient
}

func main() {
	p := &provider{}
	if engineAddress := pluginmain.EngineAddress(os.Args[1:]); engineAddress != "" {
		conn, err := grpc.NewClient(engineAddress, grpc.WithTransportCredentials(insecure.NewCredentials()),
			rpcutil.GrpcChannelOptions())
		if err != nil {
			pluginmain.Fail("pulumi-resource-command", fmt.Errorf("engine %s: %w", engineAddress, err))
		}
		p.engine = pulumirpc.NewEngineClient(conn)
	}
	pluginmain.Serve("pulumi-resource-command", func(s *grpc.Server) { pulumirpc.RegisterResourceProviderServer(s, p) })
}

// ---- plugin plumbing -------------------------------------------------------------------------

func (p *provider) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: Version}, nil
}

func (p *provider) CheckConfig(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	return &pulumirpc.CheckResponse{Inputs: req.GetNews()}, nil
}

func (p *provider) DiffConfig(context.Context, *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	return &pulumirpc.DiffResponse{Changes: pulumirpc.DiffResponse_DIFF_NONE}, nil
}

func (p *provider) Configure(context.Context, *pulumirpc.ConfigureRequest) (*pulumirpc.ConfigureResponse, error) {
	return &pulumirpc.ConfigureResponse{AcceptSecrets: true, SupportsPreview: false}, nil
}

func (p *provider) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

func (p *provider) Invoke(_ context.Context, req *pulumirpc.InvokeRequest) (*pulumirpc.InvokeResponse, error) {
	return nil, status.Errorf(codes.Unimplemented, "%s is not implemented by the nodefleet command stand-in", req.GetTok())
}

func checkType(urn string) error {
	if t := resource.URN(urn).Type(); string(t) != remoteCommand {
		return status.Errorf(codes.Unimplemented,
			"%s is not implemented by the nodefleet command stand-in (only %s is)", t, remoteCommand)
	}
	return nil
}

var (
	withSecrets = plugin.MarshalOptions{KeepUnknowns: true, KeepSecrets: true, SkipNulls: true}
	plainValues = plugin.MarshalOptions{KeepUnknowns: true, SkipNulls: true}
)

func unmarshal(s *structpb.Struct, opts plugin.MarshalOptions) (resource.PropertyMap, error) {
	if s == nil {
		return resource.PropertyMap{}, nil
	}
	return plugin.UnmarshalProperties(s, opts)
}

// ---- Check and Diff ----------------------------------------------------------------------------

var loggingModes = map[string]bool{"stdout": true, "stderr": true, "stdoutAndStderr": true, "none": true}

func (p *provider) Check(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	if err := checkType(req.GetUrn()); err != nil {
		return nil, err
	}
	news, err := unmarshal(req.GetNews(), withSecrets)
	if err != nil {
		return nil, err
	}
	var failures []*pulumirpc.CheckFailure
	fail := func(prop, reason string) {
		failures = append(failures, &pulumirpc.CheckFailure{Property: prop, Reason: reason})
	}
	connV, ok := news["connection"]
	if !ok {
		fail("connection", "missing required property 'connection'")
	} else if !connV.ContainsUnknowns() {
		conn := unwrap(connV)
		if !conn.IsObject() {
			fail("connection", "must be an object")
		} else {
			obj := conn.ObjectValue()
			if h := unwrap(obj["host"]); !h.IsString() || h.StringValue() == "" {
				fail("connection.host", "missing required property 'host'")
			}
			if _, has := obj["proxy"]; has {
				fail("connection.proxy", "proxy connections are not implemented by the nodefleet command stand-in")
			}
			setDefault(obj, "port", resource.NewNumberProperty(22))
			setDefault(obj, "user", resource.NewStringProperty("root"))
			setDefault(obj, "dialErrorLimit", resource.NewNumberProperty(10))
			setDefault(obj, "perDialTimeout", resource.NewNumberProperty(15))
		}
	}
	if l, has := news["logging"]; has && l.IsString() && !loggingModes[l.StringValue()] {
		fail("logging", fmt.Sprintf("%q is not one of stdout, stderr, stdoutAndStderr, none", l.StringValue()))
	}
	setDefault(news, "addPreviousOutputInEnv", resource.NewBoolProperty(true))
	inputs, err := plugin.MarshalProperties(news, withSecrets)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.CheckResponse{Inputs: inputs, Failures: failures}, nil
}

func setDefault(m resource.PropertyMap, key resource.PropertyKey, v resource.PropertyValue) {
	if _, has := m[key]; !has {
		m[key] = v
	}
}

func unwrap(v resource.PropertyValue) resource.PropertyValue {
	for v.IsSecret() {
		v = v.SecretValue().Element
	}
	return v
}

// inputKeys are the properties that belong to the inputs; stdout/stderr are outputs only.
func inputsOf(m resource.PropertyMap) resource.PropertyMap {
	out := resource.PropertyMap{}
	for k, v := range m {
		if k != "stdout" && k != "stderr" {
			out[k] = v
		}
	}
	return out
}

func (p *provider) Diff(_ context.Context, req *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	if err := checkType(req.GetUrn()); err != nil {
		return nil, err
	}
	oldStruct := req.GetOldInputs()
	if oldStruct == nil {
		oldStruct = req.GetOlds()
	}
	olds, err := unmarshal(oldStruct, plainValues)
	if err != nil {
		return nil, err
	}
	olds = inputsOf(olds)
	news, err := unmarshal(req.GetNews(), plainValues)
	if err != nil {
		return nil, err
	}
	ignored := map[string]bool{}
	for _, k := range req.GetIgnoreChanges() {
		ignored[k] = true
	}
	keys := map[resource.PropertyKey]bool{}
	for k := range olds {
		keys[k] = true
	}
	for k := range news {
		keys[k] = true
	}
	var diffs, replaces []string
	detailed := map[string]*pulumirpc.PropertyDiff{}
	for k := range keys {
		if ignored[string(k)] {
			continue
		}
		o, hadOld := olds[k]
		n, hasNew := news[k]
		if hadOld && hasNew && !n.ContainsUnknowns() && o.DeepEquals(n) {
			continue
		}
		kind := pulumirpc.PropertyDiff_UPDATE
		switch {
		case !hadOld:
			kind = pulumirpc.PropertyDiff_ADD
		case !hasNew:
			kind = pulumirpc.PropertyDiff_DELETE
		}
		if k == "triggers" {
			replaces = append(replaces, string(k))
			kind += 1 // the *_REPLACE variant follows each kind in the enum
		}
		diffs = append(diffs, string(k))
		detailed[string(k)] = &pulumirpc.PropertyDiff{Kind: kind, InputDiff: true}
	}
	changes := pulumirpc.DiffResponse_DIFF_NONE
	if len(diffs) > 0 {
		changes = pulumirpc.DiffResponse_DIFF_SOME
	}
	return &pulumirpc.DiffResponse{
		Changes: changes, Diffs: diffs, Replaces: replaces,
		DetailedDiff: detailed, HasDetailedDiff: true,
	}, nil
}

// ---- Create, Read, Update, Delete --------------------------------------------------------------

func (p *provider) Create(ctx context.Context, req *pulumirpc.CreateRequest) (*pulumirpc.CreateResponse, error) {
	if err := checkType(req.GetUrn()); err != nil {
		return nil, err
	}
	state, err := unmarshal(req.GetProperties(), withSecrets)
	if err != nil {
		return nil, err
	}
	if req.GetPreview() {
		state["stdout"] = resource.MakeComputed(resource.NewStringProperty(""))
		state["stderr"] = resource.MakeComputed(resource.NewStringProperty(""))
		props, err := plugin.MarshalProperties(state, withSecrets)
		return &pulumirpc.CreateResponse{Properties: props}, err
	}
	args, err := parseArgs(state)
	if err != nil {
		return nil, err
	}
	stdout, stderr, err := p.run(ctx, req.GetUrn(), args, args.create, nil, timeout(req.GetTimeout()))
	if err != nil {
		return nil, err
	}
	state["stdout"] = resource.NewStringProperty(stdout)
	state["stderr"] = resource.NewStringProperty(stderr)
	props, err := plugin.MarshalProperties(state, withSecrets)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.CreateResponse{Id: resource.URN(req.GetUrn()).Name() + "-" + randomSuffix(), Properties: props}, nil
}

func (p *provider) Read(_ context.Context, req *pulumirpc.ReadRequest) (*pulumirpc.ReadResponse, error) {
	if err := checkType(req.GetUrn()); err != nil {
		return nil, err
	}
	// A remote command has nothing to read back: its state is what the last run recorded.
	return &pulumirpc.ReadResponse{Id: req.GetId(), Properties: req.GetProperties(), Inputs: req.GetInputs()}, nil
}

func (p *provider) Update(ctx context.Context, req *pulumirpc.UpdateRequest) (*pulumirpc.UpdateResponse, error) {
	if err := checkType(req.GetUrn()); err != nil {
		return nil, err
	}
	news, err := unmarshal(req.GetNews(), withSecrets)
	if err != nil {
		return nil, err
	}
	olds, err := unmarshal(req.GetOlds(), plainValues)
	if err != nil {
		return nil, err
	}
	if req.GetPreview() {
		news["stdout"] = resource.MakeComputed(resource.NewStringProperty(""))
		news["stderr"] = resource.MakeComputed(resource.NewStringProperty(""))
		props, err := plugin.MarshalProperties(news, withSecrets)
		return &pulumirpc.UpdateResponse{Properties: props}, err
	}
	args, err := parseArgs(news)
	if err != nil {
		return nil, err
	}
	script := args.update
	if script == "" {
		script = args.create
	}
	stdout, stderr, err := p.run(ctx, req.GetUrn(), args, script, olds, timeout(req.GetTimeout()))
	if err != nil {
		return nil, err
	}
	news["stdout"] = resource.NewStringProperty(stdout)
	news["stderr"] = resource.NewStringProperty(stderr)
	props, err := plugin.MarshalProperties(news, withSecrets)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.UpdateResponse{Properties: props}, nil
}

func (p *provider) Delete(ctx context.Context, req *pulumirpc.DeleteRequest) (*emptypb.Empty, error) {
	if err := checkType(req.GetUrn()); err != nil {
		return nil, err
	}
	state, err := unmarshal(req.GetProperties(), plainValues)
	if err != nil {
		return nil, err
	}
	args, err := parseArgs(state)
	if err != nil {
		return nil, err
	}
	if args.delete == "" {
		return &emptypb.Empty{}, nil
	}
	if _, _, err := p.run(ctx, req.GetUrn(), args, args.delete, state, timeout(req.GetTimeout())); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

func timeout(seconds float64) time.Duration {
	if seconds <= 0 {
		return 0
	}
	return time.Duration(seconds * float64(time.Second))
}

func randomSuffix() string {
	return strconv.FormatInt(time.Now().UnixNano()%1_000_000_000, 36)
}

// ---- arguments ---------------------------------------------------------------------------------

type connection struct {
	host, user, password, privateKey, keyPassword, agentSocket, hostKey string
	port, dialErrorLimit                                                int
	perDialTimeout                                                      time.Duration
}

type commandArgs struct {
	conn                   connection
	create, update, delete string
	stdin                  *string
	environment            map[string]string
	logging                string
	addPreviousOutput      bool
}

func str(m resource.PropertyMap, k resource.PropertyKey) string {
	v := unwrap(m[k])
	if v.IsString() {
		return v.StringValue()
	}
	return ""
}

func num(m resource.PropertyMap, k resource.PropertyKey, def int) int {
	v := unwrap(m[k])
	if v.IsNumber() {
		return int(v.NumberValue())
	}
	return def
}

func parseArgs(m resource.PropertyMap) (commandArgs, error) {
	a := commandArgs{
		create: str(m, "create"), update: str(m, "update"), delete: str(m, "delete"),
		logging: "stdoutAndStderr", addPreviousOutput: true, environment: map[string]string{},
	}
	if l := str(m, "logging"); l != "" {
		a.logging = l
	}
	if v := unwrap(m["addPreviousOutputInEnv"]); v.IsBool() {
		a.addPreviousOutput = v.BoolValue()
	}
	if v := unwrap(m["stdin"]); v.IsString() {
		s := v.StringValue()
		a.stdin = &s
	}
	if v := unwrap(m["environment"]); v.IsObject() {
		for k, ev := range v.ObjectValue() {
			if ev = unwrap(ev); ev.IsString() {
				a.environment[string(k)] = ev.StringValue()
			}
		}
	}
	c := unwrap(m["connection"])
	if !c.IsObject() {
		return a, errors.New("connection: missing")
	}
	cm := c.ObjectValue()
	a.conn = connection{
		host: str(cm, "host"), user: str(cm, "user"), password: str(cm, "password"),
		privateKey: str(cm, "privateKey"), keyPassword: str(cm, "privateKeyPassword"),
		agentSocket: str(cm, "agentSocketPath"), hostKey: str(cm, "hostKey"),
		port: num(cm, "port", 22), dialErrorLimit: num(cm, "dialErrorLimit", 10),
		perDialTimeout: time.Duration(num(cm, "perDialTimeout", 15)) * time.Second,
	}
	if a.conn.user == "" {
		a.conn.user = "root"
	}
	if a.conn.host == "" {
		return a, errors.New("connection.host: missing")
	}
	return a, nil
}

// ---- SSH ---------------------------------------------------------------------------------------

func (c connection) clientConfig() (*ssh.ClientConfig, error) {
	var auths []ssh.AuthMethod
	if c.privateKey != "" {
		var signer ssh.Signer
		var err error
		if c.keyPassword != "" {
			signer, err = ssh.ParsePrivateKeyWithPassphrase([]byte(c.privateKey), []byte(c.keyPassword))
		} else {
			signer, err = ssh.ParsePrivateKey([]byte(c.privateKey))
		}
		if err != nil {
			return nil, fmt.Errorf("connection.privateKey: %w", err)
		}
		auths = append(auths, ssh.PublicKeys(signer))
	}
	if c.password != "" {
		auths = append(auths, ssh.Password(c.password))
	}
	if c.agentSocket != "" {
		sock, err := net.Dial("unix", c.agentSocket)
		if err != nil {
			return nil, fmt.Errorf("connection.agentSocketPath: %w", err)
		}
		auths = append(auths, ssh.PublicKeysCallback(agent.NewClient(sock).Signers))
	}
	hostKeyCallback := ssh.InsecureIgnoreHostKey()
	if c.hostKey != "" {
		want, _, _, _, err := ssh.ParseAuthorizedKey([]byte(c.hostKey))
		if err != nil {
			return nil, fmt.Errorf("connection.hostKey: %w", err)
		}
		hostKeyCallback = ssh.FixedHostKey(want)
	}
	return &ssh.ClientConfig{
		User: c.user, Auth: auths, HostKeyCallback: hostKeyCallback, Timeout: c.perDialTimeout,
	}, nil
}

func (c connection) dial(ctx context.Context) (*ssh.Client, error) {
	cfg, err := c.clientConfig()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(c.host, strconv.Itoa(c.port))
	var lastErr error
	for attempt := 1; c.dialErrorLimit < 0 || attempt <= c.dialErrorLimit; attempt++ {
		client, err := ssh.Dial("tcp", addr, cfg)
		if err == nil {
			return client, nil
		}
		lastErr = err
		if strings.Contains(err.Error(), "unable to authenticate") || strings.Contains(err.Error(), "host key mismatch") {
			break // retrying cannot help
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(min(attempt, 5)) * time.Second):
		}
	}
	return nil, fmt.Errorf("dial %s as %s: %w", addr, c.user, lastErr)
}

// run executes script on the remote host: stdin and environment as given, previous outputs in
// PULUMI_COMMAND_STDOUT/STDERR, output streamed to the engine log per the logging mode.
func (p *provider) run(ctx context.Context, urn string, a commandArgs, script string,
	previous resource.PropertyMap, limit time.Duration,
) (string, string, error) {
	if script == "" {
		return "", "", nil
	}
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	client, err := a.conn.dial(ctx)
	if err != nil {
		return "", "", err
	}
	defer client.Close()
	session, err := client.NewSession()
	if err != nil {
		return "", "", fmt.Errorf("ssh session: %w", err)
	}
	defer session.Close()

	env := map[string]string{}
	for k, v := range a.environment {
		env[k] = v
	}
	if a.addPreviousOutput && previous != nil {
		env["PULUMI_COMMAND_STDOUT"] = str(previous, "stdout")
		env["PULUMI_COMMAND_STDERR"] = str(previous, "stderr")
	}
	for k, v := range env {
		// Like the real provider: a name sshd does not AcceptEnv is dropped silently.
		_ = session.Setenv(k, v)
	}
	if a.stdin != nil {
		session.Stdin = strings.NewReader(*a.stdin)
	}
	var stdout, stderr bytes.Buffer
	outPipe, err := session.StdoutPipe()
	if err != nil {
		return "", "", err
	}
	errPipe, err := session.StderrPipe()
	if err != nil {
		return "", "", err
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go p.pump(&wg, outPipe, &stdout, urn, a.logging == "stdout" || a.logging == "stdoutAndStderr")
	go p.pump(&wg, errPipe, &stderr, urn, a.logging == "stderr" || a.logging == "stdoutAndStderr")
	if err := session.Start(script); err != nil {
		return "", "", fmt.Errorf("ssh start: %w", err)
	}
	done := make(chan error, 1)
	go func() {
		wg.Wait()
		done <- session.Wait()
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = session.Signal(ssh.SIGTERM)
		client.Close()
		err = fmt.Errorf("command stopped: %w", ctx.Err())
	}
	outS, errS := strings.TrimSuffix(stdout.String(), "\n"), strings.TrimSuffix(stderr.String(), "\n")
	if err != nil {
		var exit *ssh.ExitError
		if errors.As(err, &exit) {
			err = fmt.Errorf("Process exited with status %d", exit.ExitStatus())
		}
		if a.logging == "none" {
			return outS, errS, fmt.Errorf("%w (output not shown: logging is none)", err)
		}
		return outS, errS, fmt.Errorf("%w\nStdout:\n%s\nStderr:\n%s", err, outS, errS)
	}
	return outS, errS, nil
}

func (p *provider) pump(wg *sync.WaitGroup, r io.Reader, into *bytes.Buffer, urn string, show bool) {
	defer wg.Done()
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for scanner.Scan() {
		line := scanner.Text()
		into.WriteString(line)
		into.WriteByte('\n')
		if show && p.engine != nil {
			_, _ = p.engine.Log(context.Background(), &pulumirpc.LogRequest{
				Severity: pulumirpc.LogSeverity_INFO, Message: line, Urn: urn,
			})
		}
	}
}
