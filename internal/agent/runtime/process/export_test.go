package process

import (
	"fmt"
	"os"
	"strings"
)

// CgroupDirOf returns the directory of pid's cgroup for controller ctl, as
// the kernel reports it in /proc/PID/cgroup.
func CgroupDirOf(pid int, ctl string) (string, error) {
	mounts, _, err := readSelfCgroups()
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	own, err := parseProcCgroup(strings.NewReader(string(data)))
	if err != nil {
		return "", err
	}
	return ownDir(mounts, own, ctl)
}
