//! Writing an output file. dynosim writes its files through a temporary sibling renamed into
//! place, so that a reader never sees half a file; renamed onto a device, a pipe, a socket or a
//! symbolic link (`--report-json /dev/null`, `-o /dev/stdout`), that would replace it with a
//! regular file (as root, `/dev/null` itself). Such a path is written directly instead,
//! truncated as DynoSim's Python `open(path, "w")` does.
//!
//! The temporary file is registered with [`crate::signals`], so a `run` stopped by Ctrl-C or
//! SIGTERM while writing removes it, and its name carries the process id and a per-process
//! count, so processes and threads writing beside each other (shards of a sweep sharing a
//! folder, two compilations filling the AIC engine cache) never share one.

use std::fs::OpenOptions;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes a file through a temporary name in the same folder, then renames it into place (a
/// device, pipe or link is written in place). Missing parent folders are created.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// [`write_atomic`] with the content streamed by `fill` (large files are never held whole in
/// memory). On any error the temporary file is removed and `path` is left as it was.
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    if is_special(path) {
        return write_special(path, fill);
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let tmp = temp_sibling(path);
    let result = (|| {
        let mut w = BufWriter::new(crate::signals::create_removable(&tmp)?);
        fill(&mut w)?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    crate::signals::keep(&tmp);
    result
}

/// A hidden name beside `path` for writing it: `.{name}.{pid}.{n}.tmp`, unique within the
/// process and across processes.
pub fn temp_sibling(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{name}.{}.{n}.tmp", std::process::id()))
}

/// Whether `path` is a symbolic link, or exists and is neither a regular file nor a folder.
pub fn is_special(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
        || std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// Writes to an existing special file in place, as `fill` streams it.
pub fn write_special(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let file = OpenOptions::new().write(true).truncate(true).open(path)?;
    let mut w = BufWriter::new(file);
    fill(&mut w)?;
    w.flush()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_written_whole_into_new_folders_and_no_temporary_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/report.json");
        write_atomic(&path, b"{}").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{}");
        // A failing fill leaves the old file as it was and removes its temporary.
        let failed = write_atomic_with(&path, |w| {
            w.write_all(b"half")?;
            Err(io::Error::other("disk full"))
        });
        assert!(failed.is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"{}");
        let left: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["report.json"]);
        // Temporary names differ between writes of the same path.
        assert_ne!(temp_sibling(&path), temp_sibling(&path));
    }

    #[test]
    fn devices_are_special_and_written_in_place() {
        let null = Path::new("/dev/null");
        assert!(is_special(null));
        write_special(null, |w| w.write_all(b"report")).unwrap();
        assert!(is_special(null), "/dev/null is still a device");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("r.json");
        assert!(!is_special(&file), "a missing path is not special");
        std::fs::write(&file, "{}").unwrap();
        assert!(!is_special(&file));
        assert!(!is_special(dir.path()));
        // A link is written through, not replaced; its target is truncated first.
        std::fs::write(&file, "a longer old report").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(is_special(&link));
        write_special(&link, |w| w.write_all(b"{}")).unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{}");
    }
}
