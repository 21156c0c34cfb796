// pulumi-language-nodejs — nodefleet's STAND-IN for Pulumi's Node.js language host.
//
// Pulumi's own language host (module github.com/pulumi/pulumi/sdk/nodejs/cmd/pulumi-language-nodejs/v3)
// is not served by the Go module proxy this project can reach, so the offline toolchain builds
// this one instead. It does what the engine needs from a language host to run a Node.js
// program and nothing more:
//
//   - it is started by the engine with the engine's address as its last argument, prints the
//     port it serves on, and serves the LanguageRuntime gRPC service;
//   - Run starts `node <program dir>/node_modules/@pulumi/pulumi/cmd/run` with the flags and
//     environment (PULUMI_CONFIG, PULUMI_CONFIG_SECRET_KEYS, PULUMI_NODEJS_TYPESCRIPT, …) that the
//     Node.js SDK's run script reads, so the program itself runs on the real SDK; exit code 32
//     means the program already reported its error (bail);
//   - GetRequiredPackages answers an empty list: providers are loaded when the program first
//     registers one of their resources (with automatic plugin download disabled they must be
//     installed or on PATH);
//   - RunPlugin runs a Node.js policy pack (an analyzer plugin: `pulumi preview --policy-pack`)
//     with the SDK's `cmd/run-policy-pack` from the pack's node_modules, streaming its stdout and
//     stderr back to the engine; other plugin kinds written in Node.js answer Unimplemented;
//   - code generation, templates and dependency installation are not supported and answer
//     Unimplemented.
//
// With the real host installed (`pulumi-language-nodejs` from a Pulumi release on PATH) this
// program is not needed; scripts/toolchain.sh prefers a real one when it finds it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"nodefleet.local/toolchain/standins/internal/pluginmain"
)

// Version is what GetPluginInfo reports; it is set at build time to the CLI version it serves.
var Version = "3.248.0"

// bailExitCode is the Node.js SDK's exit code for "the error was already reported".
const bailExitCode = 32

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	engineAddress string
}

func main() {
	// The engine may pass flags (e.g. -root=…) before its address; the address is last.
	engineAddress := pluginmain.EngineAddress(os.Args[1:])
	if engineAddress == "" {
		pluginmain.Fail("pulumi-language-nodejs", errors.New("missing the engine address argument"))
	}
	h := &host{engineAddress: engineAddress}
	pluginmain.Serve("pulumi-language-nodejs", func(s *grpc.Server) { pulumirpc.RegisterLanguageRuntimeServer(s, h) })
}

func (h *host) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: Version}, nil
}

func (h *host) GetRequiredPlugins(context.Context, *pulumirpc.GetRequiredPluginsRequest) (*pulumirpc.GetRequiredPluginsResponse, error) {
	return &pulumirpc.GetRequiredPluginsResponse{}, nil
}

func (h *host) GetRequiredPackages(context.Context, *pulumirpc.GetRequiredPackagesRequest) (*pulumirpc.GetRequiredPackagesResponse, error) {
	return &pulumirpc.GetRequiredPackagesResponse{}, nil
}

func (h *host) About(context.Context, *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, errors.New("node not found on PATH")
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("node --version: %w", err)
	}
	return &pulumirpc.AboutResponse{Executable: node, Version: strings.TrimSpace(string(out))}, nil
}

func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	info := req.GetInfo()
	if info == nil {
		return nil, errors.New("RunRequest carries no program info")
	}
	programDir := info.GetProgramDirectory()
	entry := info.GetEntryPoint()
	if entry == "" {
		entry = "."
	}
	runScript := filepath.Join(programDir, "node_modules", "@pulumi", "pulumi", "cmd", "run")
	if _, err := os.Stat(runScript); err != nil {
		return &pulumirpc.RunResponse{Error: fmt.Sprintf(
			"%s not found: run `npm ci` in %s first", runScript, programDir)}, nil
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return &pulumirpc.RunResponse{Error: "node not found on PATH"}, nil
	}

	args := []string{runScript,
		"--monitor=" + req.GetMonitorAddress(),
		"--engine=" + h.engineAddress,
		"--project=" + req.GetProject(),
		"--stack=" + req.GetStack(),
		"--pwd=" + req.GetPwd(),
		"--organization=" + req.GetOrganization(),
		"--root-directory=" + info.GetRootDirectory(),
	}
	if req.GetDryRun() {
		args = append(args, "--dry-run")
	}
	if p := req.GetParallel(); p > 1 {
		args = append(args, "--parallel="+strconv.Itoa(int(p)))
	}
	args = append(args, entry)
	args = append(args, req.GetArgs()...)

	config, err := json.Marshal(req.GetConfig())
	if err != nil {
		return nil, err
	}
	secretKeys := req.GetConfigSecretKeys()
	if secretKeys == nil {
		secretKeys = []string{}
	}
	secretKeysJSON, err := json.Marshal(secretKeys)
	if err != nil {
		return nil, err
	}

	env := append(os.Environ(),
		"PULUMI_CONFIG="+string(config),
		"PULUMI_CONFIG_SECRET_KEYS="+string(secretKeysJSON),
	)
	env = append(env, runtimeOptionEnv(info)...)

	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = programDir
	cmd.Env = env
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			if status, ok := exit.Sys().(syscall.WaitStatus); ok && status.Exited() {
				if status.ExitStatus() == bailExitCode {
					return &pulumirpc.RunResponse{Bail: true}, nil
				}
				return &pulumirpc.RunResponse{Error: fmt.Sprintf(
					"Program exited with non-zero exit code: %d", status.ExitStatus())}, nil
			}
			return &pulumirpc.RunResponse{Error: fmt.Sprintf("Program stopped: %v", err)}, nil
		}
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}

// runtimeOptionEnv maps the `runtime.options` of Pulumi.yaml to the variables the run script reads.
func runtimeOptionEnv(info *pulumirpc.ProgramInfo) []string {
	var env []string
	opts := info.GetOptions().AsMap()
	if ts, ok := opts["typescript"]; !ok || ts == true {
		env = append(env, "PULUMI_NODEJS_TYPESCRIPT=true")
	}
	if p, ok := opts["tsconfig"].(string); ok && p != "" {
		env = append(env, "PULUMI_NODEJS_TSCONFIG_PATH="+p)
	}
	if n, ok := opts["nodeargs"].(string); ok && n != "" {
		env = append(env, "NODE_OPTIONS="+n)
	}
	return env
}

// RunPlugin runs a policy pack: `node <node_modules>/@pulumi/pulumi/cmd/run-policy-pack
// <engine address> .` in the pack's directory, as the real host does for analyzer plugins.
// The engine reads the analyzer's port from the first line of its stdout.
func (h *host) RunPlugin(req *pulumirpc.RunPluginRequest, stream grpc.ServerStreamingServer[pulumirpc.RunPluginResponse]) error {
	if req.GetKind() != "analyzer" {
		return status.Errorf(codes.Unimplemented, "the stand-in language host runs only policy packs (analyzer plugins), not %q plugins", req.GetKind())
	}
	info := req.GetInfo()
	if info == nil {
		return errors.New("RunPluginRequest carries no program info")
	}
	dir := info.GetProgramDirectory()
	// Found the way Node.js resolves a package: in node_modules here or in a parent directory.
	runScript := ""
	for d := dir; runScript == ""; d = filepath.Dir(d) {
		candidate := filepath.Join(d, "node_modules", "@pulumi", "pulumi", "cmd", "run-policy-pack")
		if _, err := os.Stat(candidate); err == nil {
			runScript = candidate
		} else if d == filepath.Dir(d) {
			return fmt.Errorf("@pulumi/pulumi/cmd/run-policy-pack not found from %s: install the policy pack's dependencies (npm ci) first", dir)
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return errors.New("node not found on PATH")
	}
	cmd := exec.CommandContext(stream.Context(), node, append(append([]string{runScript}, req.GetArgs()...), ".")...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), req.GetEnv()...), runtimeOptionEnv(info)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	// One sender at a time: a gRPC stream is not safe for concurrent Send.
	chunks := make(chan *pulumirpc.RunPluginResponse)
	forward := func(r io.Reader, wrap func([]byte) *pulumirpc.RunPluginResponse, done chan<- struct{}) {
		buf := make([]byte, 32*1024)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				chunks <- wrap(append([]byte(nil), buf[:n]...))
			}
			if err != nil {
				close(done)
				return
			}
		}
	}
	outDone, errDone := make(chan struct{}), make(chan struct{})
	go forward(stdout, func(b []byte) *pulumirpc.RunPluginResponse {
		return &pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Stdout{Stdout: b}}
	}, outDone)
	go forward(stderr, func(b []byte) *pulumirpc.RunPluginResponse {
		return &pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Stderr{Stderr: b}}
	}, errDone)
	var sendErr error
	for open := 2; open > 0; {
		select {
		case c := <-chunks:
			if sendErr == nil {
				sendErr = stream.Send(c)
			}
		case <-outDone:
			outDone = nil
			open--
		case <-errDone:
			errDone = nil
			open--
		}
	}
	code := int32(0)
	if err := cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return err
		}
		code = int32(exit.ExitCode())
	}
	if sendErr != nil {
		return sendErr
	}
	return stream.Send(&pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Exitcode{Exitcode: code}})
}
