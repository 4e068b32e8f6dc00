package objectstore

// Op names a Store operation, for fault rules and instrumentation.
type Op string

// The Store operations.
const (
	OpGet    Op = "get"
	OpHead   Op = "head"
	OpPut    Op = "put"
	OpDelete Op = "delete"
	OpList   Op = "list"
)

// AllOps lists every Op.
var AllOps = []Op{OpGet, OpHead, OpPut, OpDelete, OpList}
