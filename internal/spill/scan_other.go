//go:build !unix

package spill

import "io"

func scan(s *File, fn func(b []byte) error) error {
	b, err := io.ReadAll(s.Section(0, s.size))
	if err != nil {
		return err
	}
	return fn(b)
}
