package docker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// demux reads the engine's log stream of a container without a TTY, in
// which each chunk of output comes as a frame: one byte naming the stream
// (0 stdin, 1 stdout, 2 stderr, 3 an error of the engine's), three zero
// bytes, the payload's length as a big-endian uint32, then the payload. It
// yields the stdout and stderr payloads in the order the engine sent them
// (the engine keeps the order within a stream; between the two it is as
// close as its separate readers of the two pipes came), and turns a
// stream-3 frame into an error.
type demux struct {
	src  io.ReadCloser
	left uint32 // payload bytes of the current frame not yet read
	hdr  [8]byte
}

func newDemux(src io.ReadCloser) *demux { return &demux{src: src} }

func (d *demux) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for d.left == 0 {
		if _, err := io.ReadFull(d.src, d.hdr[:]); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return 0, errors.New("docker logs: stream ends inside a frame header")
			}
			return 0, err // io.EOF between frames is the end
		}
		size := binary.BigEndian.Uint32(d.hdr[4:])
		switch d.hdr[0] {
		case 0, 1, 2:
			d.left = size
		case 3:
			msg := make([]byte, min(size, 64<<10))
			n, _ := io.ReadFull(d.src, msg)
			return 0, fmt.Errorf("docker logs: the engine reported: %s", msg[:n])
		default:
			return 0, fmt.Errorf("docker logs: frame for unknown stream %d", d.hdr[0])
		}
	}
	if uint32(len(p)) > d.left {
		p = p[:d.left]
	}
	n, err := d.src.Read(p)
	d.left -= uint32(n)
	if errors.Is(err, io.EOF) && d.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (d *demux) Close() error { return d.src.Close() }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	t.buf = append(t.buf, p...)
	// Compact only once twice the limit is held, so a long stream of small
	// writes costs amortised constant time per byte.
	if len(t.buf) >= 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return n, nil
}

// Bytes returns the kept tail.
func (t *tailBuffer) Bytes() []byte {
	if len(t.buf) > t.max {
		return t.buf[len(t.buf)-t.max:]
	}
	return t.buf
}
