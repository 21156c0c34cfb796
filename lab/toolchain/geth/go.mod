// Pins the real go-ethereum (geth) that the dev hosts run: built from the Go module proxy by
// scripts/geth.sh into a cache outside the clone. geth runs in dev mode there, producing real
// blocks with real transactions; its export is what the geth -> reth switch imports.
module nodefleet.local/geth

go 1.25.11

require github.com/ethereum/go-ethereum v1.17.0
