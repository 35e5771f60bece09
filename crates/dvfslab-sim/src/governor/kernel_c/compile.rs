//! Building a governor file: the system C compiler compiles it, with dvfslab's shim header
//! included first and the shim's own C file beside it, into a shared object kept in the cache
//! under the hash of everything that went in (the file, the shim, the compiler, the flags).
//!
//! The user's file is compiled as written, through a wrapper that includes the shim header and
//! then the file's text after a `#line` directive, so the compiler names the user's file and
//! lines. The headers the file includes (`"sched.h"`, `<linux/...>`) resolve to the shim's
//! empty stand-ins: the shim header declared everything first.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::kernel::KernelVersion;

/// The shim's sources, shipped inside the simulator and written next to each build.
const SHIM_HEADER: &str = include_str!("shim/dvfslab_kernel.h");
const SHIM_ABI: &str = include_str!("shim/dvfslab_abi.h");
const SHIM_C: &str = include_str!("shim/shim.c");

/// Headers a governor file includes by name; each is an empty stand-in, the shim header
/// having declared what they would (5.x files include these; 6.x files include nothing).
const STAND_IN_HEADERS: &[&str] = &[
    "sched.h",
    "linux/sched/cpufreq.h",
    "linux/sched/clock.h",
    "linux/sched/topology.h",
    "linux/sched.h",
    "linux/cpufreq.h",
    "linux/kernel_stat.h",
    "linux/slab.h",
    "linux/tick.h",
    "linux/export.h",
    "linux/module.h",
    "linux/kthread.h",
    "linux/cpu.h",
    "linux/percpu.h",
    "linux/percpu-defs.h",
    "linux/workqueue.h",
    "linux/irq_work.h",
    "linux/mutex.h",
    "linux/init.h",
    "linux/kernel.h",
    "linux/types.h",
    "linux/cpumask.h",
    "linux/sysfs.h",
    "linux/kobject.h",
    "linux/list.h",
    "linux/spinlock.h",
    "linux/energy_model.h",
    "linux/cpuidle.h",
    "uapi/linux/sched/types.h",
    "trace/events/power.h",
    "linux/atomic.h",
];

/// The DBS governors' shared code (ondemand, conservative): built beside a governor file that
/// includes its header, from the same folder.
const DBS_COMMON: &str = "cpufreq_governor.c";

/// The files of the user's folder a build reads besides the governor file: the DBS common
/// code where the file uses it, and the headers of that folder these include (`#include "X"`).
fn companions(file: &Path, source: &str) -> Vec<PathBuf> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let quoted = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.trim().strip_prefix("#include").map(str::trim))
            .filter_map(|l| l.strip_prefix('"')?.split('"').next().map(str::to_string))
            .collect()
    };
    let mut files: Vec<PathBuf> = Vec::new();
    let mut queue: Vec<String> = quoted(source);
    while let Some(name) = queue.pop() {
        let path = dir.join(&name);
        if files.contains(&path) || !path.is_file() || STAND_IN_HEADERS.contains(&name.as_str()) {
            continue;
        }
        if let Ok(text) = std::fs::read_to_string(&path) {
            queue.extend(quoted(&text));
        }
        if name == "cpufreq_governor.h" {
            queue.push(DBS_COMMON.to_string());
        }
        files.push(path);
    }
    files.sort();
    files
}

/// What every build passes the compiler (besides the version and paths).
const CFLAGS: &[&str] = &[
    "-shared",
    "-fPIC",
    "-O2",
    "-g",
    "-std=gnu11",
    "-fno-strict-aliasing",
    "-fvisibility=default",
    "-Werror=implicit-function-declaration",
    "-Werror=incompatible-pointer-types",
    "-Werror=int-conversion",
    "-Wl,-z,defs",
];

/// The compiler: `$CC`, else `cc`.
fn compiler() -> String {
    std::env::var("CC").ok().filter(|c| !c.trim().is_empty()).unwrap_or_else(|| "cc".to_string())
}

/// Where built governors are kept: `$DVFSLAB_CACHE_DIR`, else `$XDG_CACHE_HOME/dvfslab`, else
/// `~/.cache/dvfslab`; under it `kernel-governors/`.
fn cache_dir() -> PathBuf {
    let base = std::env::var_os("DVFSLAB_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("dvfslab")))
        .or_else(|| std::env::var_os("HOME").map(|d| PathBuf::from(d).join(".cache").join("dvfslab")))
        .unwrap_or_else(|| std::env::temp_dir().join("dvfslab-cache"));
    base.join("kernel-governors")
}

/// 64-bit FNV-1a: the cache key of a build (a stable hash, unlike std's hasher).
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in part.iter().chain(&[0xff]) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// Build `file` as kernel `version` (or find it built): the shared object's path, or the
/// message to show (what to install, the compiler's own output, or the symbol the shim lacks).
pub(super) fn build(file: &Path, version: KernelVersion) -> Result<PathBuf, String> {
    let source = std::fs::read(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let cc = compiler();
    let cc_version = Command::new(&cc).arg("--version").output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            format!("kernel governors are built with a C compiler, and there is no '{cc}': install one (Debian, Ubuntu: apt-get install gcc; Fedora: dnf install gcc; macOS: xcode-select --install)")
        } else {
            format!("cannot run the C compiler '{cc}': {e}")
        }
    })?;
    let version_args = version_defines(version);
    let companions = companions(file, &String::from_utf8_lossy(&source));
    let companion_bytes: Vec<Vec<u8>> = companions
        .iter()
        .map(|p| std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display())))
        .collect::<Result<_, _>>()?;
    let mut flags: Vec<&[u8]> = CFLAGS.iter().map(|f| f.as_bytes()).collect();
    flags.extend(version_args.iter().map(|f| f.as_bytes()));
    let key = fnv1a(
        &[
            &[super::ffi::ABI as u8],
            cc.as_bytes(),
            &cc_version.stdout,
            SHIM_HEADER.as_bytes(),
            SHIM_ABI.as_bytes(),
            SHIM_C.as_bytes(),
            &source,
        ]
        .into_iter()
        .chain(companion_bytes.iter().map(Vec::as_slice))
        .chain(flags)
        .collect::<Vec<_>>(),
    );
    let dir = cache_dir();
    let library = dir.join(format!("{key:016x}.so"));
    if library.is_file() {
        return Ok(library);
    }
    static BUILDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let work = dir.join(format!("build-{key:016x}-{}-{n}", std::process::id()));
    let sibling = companions.iter().find(|p| p.file_name().is_some_and(|n| n == DBS_COMMON));
    let result = compile_in(&work, (file, &source), sibling, &cc, &version_args, &library);
    let _ = std::fs::remove_dir_all(&work);
    result.map(|()| library)
}

/// The defines that give the shim the version to build as.
fn version_defines(version: KernelVersion) -> Vec<String> {
    vec![format!("-DDVFSLAB_KERNEL_MAJOR={}", version.0), format!("-DDVFSLAB_KERNEL_MINOR={}", version.1)]
}

fn compile_in(
    work: &Path,
    (file, source): (&Path, &[u8]),
    sibling: Option<&PathBuf>,
    cc: &str,
    version_args: &[String],
    library: &Path,
) -> Result<(), String> {
    let io = |e: std::io::Error| format!("cannot write the build of {} in {}: {e}", file.display(), work.display());
    let include = work.join("include");
    std::fs::create_dir_all(&include).map_err(io)?;
    for (name, text) in [("dvfslab_kernel.h", SHIM_HEADER), ("dvfslab_abi.h", SHIM_ABI), ("shim.c", SHIM_C)] {
        std::fs::write(work.join(name), text).map_err(io)?;
    }
    for name in STAND_IN_HEADERS {
        let path = include.join(name);
        std::fs::create_dir_all(path.parent().expect("a header's folder")).map_err(io)?;
        std::fs::write(&path, "/* Declared in dvfslab_kernel.h, included before the governor file. */\n")
            .map_err(io)?;
    }
    let shown = file.canonicalize().unwrap_or_else(|_| file.to_path_buf());
    let wrap = |name: &str, shown: &Path, text: &[u8]| -> Result<(), String> {
        let mut wrapper = format!("#include \"dvfslab_kernel.h\"\n#line 1 \"{}\"\n", c_string(shown)).into_bytes();
        wrapper.extend_from_slice(text);
        wrapper.push(b'\n');
        std::fs::write(work.join(name), wrapper).map_err(io)
    };
    wrap("governor.c", &shown, source)?;
    let mut units = vec!["governor.c", "shim.c"];
    if let Some(sibling) = sibling {
        let text = std::fs::read(sibling).map_err(|e| format!("cannot read {}: {e}", sibling.display()))?;
        wrap("dbs_common.c", &sibling.canonicalize().unwrap_or_else(|_| sibling.clone()), &text)?;
        units.push("dbs_common.c");
    }
    // The user's folder after the stand-ins: its own headers (cpufreq_governor.h) are found
    // there, never the kernel's sched.h.
    let user_dir = shown.parent().map(Path::to_path_buf).unwrap_or_default();
    let built = work.join("governor.so");
    let output = Command::new(cc)
        .current_dir(work)
        .env("LC_ALL", "C")
        .args(CFLAGS)
        .args(version_args)
        .arg("-I.")
        .arg("-Iinclude")
        .arg("-iquote")
        .arg("include")
        .arg("-iquote")
        .arg(&user_dir)
        .arg("-o")
        .arg(&built)
        .args(&units)
        .output()
        .map_err(|e| format!("cannot run the C compiler '{cc}': {e}"))?;
    if !output.status.success() {
        // The linker names the wrappers; the user knows the files they wrap.
        let mut stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        stderr = stderr.replace(&work.join("governor.c").display().to_string(), &shown.display().to_string());
        if let Some(sibling) = sibling {
            stderr = stderr.replace(&work.join("dbs_common.c").display().to_string(), &sibling.display().to_string());
        }
        return Err(diagnose(file, &stderr));
    }
    // Into the cache in one step: a concurrent build of the same file writes the same bytes.
    let staged = work.join("staged.so");
    std::fs::copy(&built, &staged).map_err(io)?;
    std::fs::rename(&staged, library).map_err(io)?;
    Ok(())
}

/// A path inside a C string literal.
fn c_string(path: &Path) -> String {
    path.display().to_string().replace('\\', "\\\\").replace('"', "\\\"")
}

/// What the compiler's failure means for the user: a symbol the shim does not provide
/// (named, with its file and line, and what the shim covers), else the compiler's own words.
fn diagnose(file: &Path, stderr: &str) -> String {
    if let Some((place, symbol)) = missing_symbol(stderr) {
        return format!(
            "{place}: uses {symbol}, which dvfslab's kernel shim does not provide (it covers {}); \
             the compiler said:\n{}",
            super::SUPPORTED,
            stderr.trim_end()
        );
    }
    format!("{} did not compile against dvfslab's kernel shim:\n{}", file.display(), stderr.trim_end())
}

/// The first error that says the shim lacks something, as ("file:line", "what").
fn missing_symbol(stderr: &str) -> Option<(String, String)> {
    const PATTERNS: &[(&str, &str, &str)] = &[
        ("error: implicit declaration of function '", "'", "function "),
        ("error: '", "' undeclared", ""),
        ("error: unknown type name '", "'", "type "),
        ("error: invalid use of undefined type '", "'", ""),
        ("undefined reference to `", "'", ""),
    ];
    for line in stderr.lines() {
        for (start, end, kind) in PATTERNS {
            let Some(at) = line.find(start) else { continue };
            let rest = &line[at + start.len()..];
            let Some(stop) = rest.find(end) else { continue };
            let place = line[..at].trim_end_matches([' ', ':']);
            let place = place.rsplit(": ").next().unwrap_or(place);
            // "file:line:col" or "file:line": keep file:line.
            let mut parts: Vec<&str> = place.rsplitn(3, ':').collect();
            parts.reverse();
            let place = match parts.as_slice() {
                [file, line, col] if col.chars().all(|c| c.is_ascii_digit()) => format!("{file}:{line}"),
                _ => place.to_string(),
            };
            return Some((place, format!("{kind}{}", &rest[..stop])));
        }
        // A structure member the shim's structure lacks.
        const NO_MEMBER: &str = "' has no member named '";
        if let (Some(at), Some(member)) = (line.find("error: '"), line.find(NO_MEMBER)) {
            if member > at {
                let place = line[..at].trim_end_matches([' ', ':']);
                let what = &line[at + "error: '".len()..member];
                let name = line[member + NO_MEMBER.len()..].split('\'').next().unwrap_or("");
                let mut parts: Vec<&str> = place.rsplitn(3, ':').collect();
                parts.reverse();
                let place = match parts.as_slice() {
                    [file, line, _] => format!("{file}:{line}"),
                    _ => place.to_string(),
                };
                return Some((place, format!("{what}'s member {name}")));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_missing_symbol_is_named_with_its_file_and_line() {
        let gcc = "/src/kernel/sched/cpufreq_schedutil.c: In function 'sugov_start':\n\
                   /src/kernel/sched/cpufreq_schedutil.c:812:9: error: implicit declaration of function 'frob_policy' [-Werror=implicit-function-declaration]\n";
        assert_eq!(
            missing_symbol(gcc),
            Some(("/src/kernel/sched/cpufreq_schedutil.c:812".into(), "function frob_policy".into()))
        );
        let gcc = "/a/b.c:40:17: error: 'SCHED_FROB' undeclared (first use in this function)\n";
        assert_eq!(missing_symbol(gcc), Some(("/a/b.c:40".into(), "SCHED_FROB".into())));
        let gcc = "/a/b.c:7:2: error: unknown type name 'frob_t'\n";
        assert_eq!(missing_symbol(gcc), Some(("/a/b.c:7".into(), "type frob_t".into())));
        let gcc = "/a/b.c:9:20: error: 'struct cpufreq_policy' has no member named 'frob'\n";
        assert_eq!(missing_symbol(gcc), Some(("/a/b.c:9".into(), "struct cpufreq_policy's member frob".into())));
        let ld = "/usr/bin/ld: /tmp/x.o: in function `sugov_init':\n/a/b.c:700: undefined reference to `frob_init'\n";
        assert_eq!(missing_symbol(ld), Some(("/a/b.c:700".into(), "frob_init".into())));
        // A plain syntax error is the compiler's to explain.
        assert_eq!(missing_symbol("/a/b.c:3:1: error: expected ';' before '}' token\n"), None);
    }

    #[test]
    fn the_cache_key_changes_with_any_input() {
        let a = fnv1a(&[b"shim", b"file"]);
        assert_eq!(a, fnv1a(&[b"shim", b"file"]));
        assert_ne!(a, fnv1a(&[b"shim", b"filf"]));
        assert_ne!(a, fnv1a(&[b"shimf", b"ile"]));
    }
}
