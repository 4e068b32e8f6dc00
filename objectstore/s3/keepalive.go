package s3

import (
	"context"
	"log/slog"
	"sync"

	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// keepAliveAnswers is how many answers keepAliveWatch looks at.
const keepAliveAnswers = 16

// keepAliveWatch warns once when the server closes the connection after each of its first
// keepAliveAnswers answers: every request then opens a connection of its own (behind TLS, a
// handshake too), which at hundreds of requests a second costs more than the requests do.
// versitygw does so unless it is started with --keep-alive.
type keepAliveWatch struct {
	logger *slog.Logger
	server string

	mu   sync.Mutex
	seen int
	kept bool // an answer left its connection open
}

// observe counts one answer; closed: the server closed its connection.
func (w *keepAliveWatch) observe(closed bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen >= keepAliveAnswers {
		return
	}
	w.seen++
	w.kept = w.kept || !closed
	if w.seen == keepAliveAnswers && !w.kept {
		w.logger.Warn("objectstore: s3: the server closed the connection after each of its first answers, so every request opens a new one; turn keep-alive on at the server (versitygw: --keep-alive)",
			"server", w.server, "answers", w.seen)
	}
}

// middleware adds the watch to each attempt of every call.
func (w *keepAliveWatch) middleware(stack *middleware.Stack) error {
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("SluiceKeepAliveWatch", func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
		out, md, err := next.HandleDeserialize(ctx, in)
		if raw, ok := out.RawResponse.(*smithyhttp.Response); ok && raw != nil && raw.Response != nil {
			w.observe(raw.Close)
		}
		return out, md, err
	}), middleware.After)
}
