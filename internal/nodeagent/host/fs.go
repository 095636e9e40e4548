package host

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// FS is the file system of the host, rooted at Root.
type FS interface {
	// Root is the directory host paths are relative to ("/" on a node).
	Root() string
	// Abs is the path of a host path under Root.
	Abs(path string) string
	// ReadFile reads a whole file.
	ReadFile(path string) ([]byte, error)
	// WriteFile writes data to an existing file in one write(2), as sysctl,
	// sysfs, debugfs and cgroupfs files want. It never creates the file.
	WriteFile(path string, data []byte) error
	// ProbeWrite opens an existing file for writing and closes it without
	// writing: it tells whether a write would be allowed (permissions,
	// read-only mounts, kernel lockdown) without changing anything.
	ProbeWrite(path string) error
	// Stat describes a file.
	Stat(path string) (fs.FileInfo, error)
	// ReadDir lists a directory.
	ReadDir(path string) ([]fs.DirEntry, error)
	// Mkdir makes one directory (a cgroup).
	Mkdir(path string) error
	// Rmdir removes one empty directory (a cgroup).
	Rmdir(path string) error
}

// OSFS is the real file system under a root directory.
type OSFS struct {
	// RootDir is "/" on a node, or a test tree.
	RootDir string
}

// NewFS returns the file system rooted at root ("" means "/").
func NewFS(root string) FS {
	if root == "" {
		root = "/"
	}
	return OSFS{RootDir: root}
}

// Root implements FS.
func (o OSFS) Root() string { return o.RootDir }

// Abs implements FS. The host path is cleaned as an absolute path first, so
// ".." can never leave the root.
func (o OSFS) Abs(path string) string {
	return filepath.Join(o.RootDir, filepath.Clean("/"+path))
}

// ReadFile implements FS.
func (o OSFS) ReadFile(path string) ([]byte, error) { return os.ReadFile(o.Abs(path)) }

// WriteFile implements FS.
func (o OSFS) WriteFile(path string, data []byte) error {
	f, err := os.OpenFile(o.Abs(path), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr != nil {
		return werr
	}
	return cerr
}

// ProbeWrite implements FS.
func (o OSFS) ProbeWrite(path string) error {
	fd, err := unix.Open(o.Abs(path), unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: o.Abs(path), Err: err}
	}
	return unix.Close(fd)
}

// Stat implements FS.
func (o OSFS) Stat(path string) (fs.FileInfo, error) { return os.Stat(o.Abs(path)) }

// ReadDir implements FS.
func (o OSFS) ReadDir(path string) ([]fs.DirEntry, error) { return os.ReadDir(o.Abs(path)) }

// Mkdir implements FS.
func (o OSFS) Mkdir(path string) error { return os.Mkdir(o.Abs(path), 0o755) }

// Rmdir implements FS.
func (o OSFS) Rmdir(path string) error {
	if err := unix.Rmdir(o.Abs(path)); err != nil {
		return &fs.PathError{Op: "rmdir", Path: o.Abs(path), Err: err}
	}
	return nil
}

// exists reports whether path exists.
func exists(fsys FS, path string) bool {
	_, err := fsys.Stat(path)
	return err == nil
}

// isPerm reports whether err is EPERM: on debugfs, kernel lockdown.
func isPerm(err error) bool { return errors.Is(err, unix.EPERM) }
