// The cli tier's scripted SSH host (main.go), built by lab/scripted-host.sh.
module nodefleet.local/lab/sim/scripted-host

go 1.25.0

require (
	github.com/pkg/sftp v1.13.6
	golang.org/x/crypto v0.53.0
)

require (
	github.com/kr/fs v0.1.0 // indirect
	golang.org/x/sys v0.46.0 // indirect
)
