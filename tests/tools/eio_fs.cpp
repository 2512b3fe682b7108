// A read-only FUSE file system over a directory whose reads start failing with EIO on demand:
// the "disk unreadable mid-run" of the out-of-core fault test (tests/tools/eio_test.sh). C++ for
// the build, written as C against libfuse3's C API.
//
//   eio_fs SOURCE MOUNTPOINT CONTROL [fuse options]
//
// Files of SOURCE appear under MOUNTPOINT, read-only. From the moment the file CONTROL exists,
// every read of a file named features.bin returns EIO (other files stay readable, so a run's
// mapped arrays do not fault). Unmount with fusermount3 -u MOUNTPOINT.
#define FUSE_USE_VERSION 31

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_source[PATH_MAX];
static char g_control[PATH_MAX];

static void full_path(char out[PATH_MAX], const char* path) {
  snprintf(out, PATH_MAX, "%s%s", g_source, path);
}

static int eio_getattr(const char* path, struct stat* st, struct fuse_file_info* fi) {
  (void)fi;
  char p[PATH_MAX];
  full_path(p, path);
  if (lstat(p, st) != 0) return -errno;
  st->st_mode &= ~(mode_t)0222;
  return 0;
}

static int eio_readdir(const char* path, void* buf, fuse_fill_dir_t fill, off_t offset,
                       struct fuse_file_info* fi, enum fuse_readdir_flags flags) {
  (void)offset;
  (void)fi;
  (void)flags;
  char p[PATH_MAX];
  full_path(p, path);
  DIR* d = opendir(p);
  if (d == NULL) return -errno;
  for (struct dirent* e = readdir(d); e != NULL; e = readdir(d))
    if (fill(buf, e->d_name, nullptr, 0, static_cast<fuse_fill_dir_flags>(0)) != 0) break;
  closedir(d);
  return 0;
}

static int eio_open(const char* path, struct fuse_file_info* fi) {
  if ((fi->flags & O_ACCMODE) != O_RDONLY) return -EROFS;
  char p[PATH_MAX];
  full_path(p, path);
  const int fd = open(p, O_RDONLY);
  if (fd < 0) return -errno;
  fi->fh = (uint64_t)fd;
  return 0;
}

static int eio_read(const char* path, char* buf, size_t size, off_t offset,
                    struct fuse_file_info* fi) {
  const char* name = strrchr(path, '/');
  if (name != NULL && strcmp(name + 1, "features.bin") == 0 && access(g_control, F_OK) == 0)
    return -EIO;
  const ssize_t got = pread((int)fi->fh, buf, size, offset);
  return got < 0 ? -errno : (int)got;
}

static int eio_release(const char* path, struct fuse_file_info* fi) {
  (void)path;
  close((int)fi->fh);
  return 0;
}

static const struct fuse_operations kOps = {
    .getattr = eio_getattr,
    .open = eio_open,
    .read = eio_read,
    .release = eio_release,
    .readdir = eio_readdir,
};

int main(int argc, char* argv[]) {
  if (argc < 4) {
    fprintf(stderr, "usage: eio_fs SOURCE MOUNTPOINT CONTROL [fuse options]\n");
    return 2;
  }
  if (realpath(argv[1], g_source) == NULL) {
    perror(argv[1]);
    return 1;
  }
  snprintf(g_control, sizeof g_control, "%s", argv[3]);
  // fuse_main's arguments: the program, the mount point, then the caller's options.
  char* args[64];
  int n = 0;
  args[n++] = argv[0];
  args[n++] = argv[2];
  for (int i = 4; i < argc && n < 63; ++i) args[n++] = argv[i];
  args[n] = NULL;
  return fuse_main(n, args, &kOps, NULL);
}
