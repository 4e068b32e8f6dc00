package objectstore

import "context"

// CheckOp is the check a backend makes before each operation, in this order: the store is
// not closed (ErrClosed), the key is valid by validate (ErrInvalidKey; nil: ValidateKey), and
// ctx is not done. Each failure is an *OpError naming op and key.
func CheckOp(ctx context.Context, closed bool, op, key string, validate func(string) error) error {
	if closed {
		return NewOpError(op, key, ErrClosed, nil)
	}
	if validate == nil {
		validate = ValidateKey
	}
	if err := validate(key); err != nil {
		return NewOpError(op, key, ErrInvalidKey, err)
	}
	if err := ctx.Err(); err != nil {
		return NewOpError(op, key, nil, err)
	}
	return nil
}
