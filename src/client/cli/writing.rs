//! Writing the files the set-up commands change (`init`, `connect telegram --write`,
//! `hooks install`): whole or not at all, through a symbolic link to the file it names
//! (a dotfiles manager's link stays a link), keeping the file's mode.

use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The largest file read for editing: settings files are small, and a huge one is not
/// what it claims to be.
pub const MAX_EDIT_BYTES: u64 = 4 * 1024 * 1024;

/// The file `path` names, following symbolic links to the last one (which need not
/// exist yet).
pub fn target(path: &Path) -> Result<PathBuf, String> {
    let mut path = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&path)
                    .map_err(|e| format!("cannot read the link {}: {e}", path.display()))?;
                path = match path.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            _ => return Ok(path),
        }
    }
    Err(format!(
        "{} is a chain of links that does not end",
        path.display()
    ))
}

/// The text of the file at `path` to edit: `None` when there is none. A directory, a
/// device, a file over [`MAX_EDIT_BYTES`] or one that is not UTF-8 is an error that
/// says so.
pub fn read_for_edit(path: &Path) -> Result<Option<String>, String> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    if !meta.is_file() {
        return Err(format!("{} is not a file", path.display()));
    }
    if meta.len() > MAX_EDIT_BYTES {
        return Err(format!(
            "{} is {} bytes, more than a settings file holds ({MAX_EDIT_BYTES} at most)",
            path.display(),
            meta.len()
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| format!("{} is not UTF-8 text", path.display()))
}

/// Writes `text` to `path` (a file, not a link: see [`target`]) at once: into a new
/// file beside it, then renamed over it, so a reader sees the old file or the new one.
/// An existing file keeps its mode; a new one gets `mode`. Missing directories are made.
pub fn write_whole(path: &Path, text: &str, mode: u32) -> Result<(), String> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("cannot make the directory {}: {e}", dir.display()))?;
    let mode = std::fs::metadata(path).map_or(mode, |m| m.permissions().mode() & 0o7777);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.gatebot-{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&temp)?;
        // The mode given at creation is cut by the umask: set it as asked.
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        format!("cannot write {}: {e}", path.display())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_goes_through_a_link_and_keeps_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("dotfiles/settings.json");
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        std::fs::write(&real, "{}").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.path().join("settings.json");
        std::os::unix::fs::symlink("dotfiles/settings.json", &link).unwrap();
        let to = target(&link).unwrap();
        assert_eq!(to, dir.path().join("dotfiles/settings.json"));
        write_whole(&to, "{\"a\": 1}\n", 0o600).unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "{\"a\": 1}\n");
        let mode = std::fs::metadata(&real).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        // A new file gets the mode asked for, in a directory made for it.
        let new = dir.path().join("new/dir/bot.toml");
        write_whole(&new, "x", 0o600).unwrap();
        let mode = std::fs::metadata(&new).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn what_is_no_settings_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_for_edit(&dir.path().join("none")).unwrap(), None);
        let e = read_for_edit(dir.path()).unwrap_err();
        assert!(e.ends_with("is not a file"), "{e}");
        let bin = dir.path().join("bin");
        std::fs::write(&bin, [0xff, 0xfe, 0]).unwrap();
        assert!(read_for_edit(&bin)
            .unwrap_err()
            .ends_with("is not UTF-8 text"));
    }
}
