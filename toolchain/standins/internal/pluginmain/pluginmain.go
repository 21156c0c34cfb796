// Package pluginmain is what both stand-in plugins do in main: find the engine address the
// engine passes as the last non-flag argument, serve gRPC on a free port, print that port for
// the engine, and run until the engine hangs up.
package pluginmain

import (
	"fmt"
	"os"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"google.golang.org/grpc"
)

// EngineAddress is the last argument that is not a flag ("" when there is none).
func EngineAddress(args []string) string {
	var address string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			address = a
		}
	}
	return address
}

// Serve registers the plugin's services, prints the port and blocks; errors end the process,
// prefixed with the plugin's name.
func Serve(name string, register func(*grpc.Server)) {
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Init: func(s *grpc.Server) error {
			register(s)
			return nil
		},
	})
	if err != nil {
		Fail(name, err)
	}
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		Fail(name, err)
	}
}

// Fail prints the error the way both stand-ins name themselves and exits 1.
func Fail(name string, err error) {
	fmt.Fprintf(os.Stderr, "%s (nodefleet stand-in): %v\n", name, err)
	os.Exit(1)
}
