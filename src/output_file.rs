//! Where an output file is not a regular file. dynosim writes its files through a temporary
//! sibling renamed into place, so that a reader never sees half a file; renamed onto a device,
//! a pipe or a socket (`--report-json /dev/null`, `-o /dev/stdout`), that would replace it with
//! a regular file (as root, `/dev/null` itself). Such a path is written directly instead.

use std::fs::OpenOptions;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// Whether `path` (its links followed) exists and is neither a regular file nor a folder.
pub fn is_special(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// Writes to an existing special file in place, as `fill` streams it.
pub fn write_special(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let mut w = BufWriter::new(OpenOptions::new().write(true).open(path)?);
    fill(&mut w)?;
    w.flush()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

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
    }
}
