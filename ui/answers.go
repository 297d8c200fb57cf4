package ui

import "fmt"

// success is a strict method's answer as its success variant T. Any other
// variant is an error rather than a panic, so a variant the spec gains
// later cannot bring a page down.
func success[T any](resp any, err error) (T, error) {
	var zero T
	if err != nil {
		return zero, err
	}
	v, ok := resp.(T)
	if !ok {
		return zero, fmt.Errorf("the control API answered %T", resp)
	}
	return v, nil
}
