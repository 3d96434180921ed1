//! Every command reads the configuration an installed program would: the
//! file `--config` or `TBSERVER_CONFIG` names, else `./config/tbserver.toml`,
//! `$XDG_CONFIG_HOME/tbserver/tbserver.toml`, `/etc/tbserver/tbserver.toml`;
//! and `tbserver generate` holds the generation budget of that file for the
//! whole job before it starts. Plain Rust, no shared data needed.

#[macro_use]
mod common;

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tbserver-cli-config-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A configuration whose built-in tables go to `tables` and whose
/// generation may use 1 GiB of memory.
fn small_budget(tables: &Path) -> String {
    format!("[builtin]\ndir = {:?}\nmax_memory_mib = 1024\n", tables.display().to_string())
}

/// `tbserver generate KRBvKQ` from `/` with `env` set: its exit status,
/// stderr and how long it took.
fn generate_krbvkq(env: &[(&str, &Path)]) -> (bool, String, Duration) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tbserver"));
    command.current_dir("/").args(["generate", "KRBvKQ"]).env_remove("TBSERVER_CONFIG");
    for (name, value) in env {
        command.env(name, value);
    }
    let start = Instant::now();
    let output = command.output().unwrap();
    (output.status.success(), String::from_utf8_lossy(&output.stderr).into_owned(), start.elapsed())
}

fn is_empty(dir: &Path) -> bool {
    !dir.exists() || std::fs::read_dir(dir).unwrap().next().is_none()
}

#[test]
fn generate_holds_the_budget_of_the_file_tbserver_config_names() {
    let dir = temp_dir("env");
    let tables = dir.join("tables");
    let file = dir.join("small.toml");
    std::fs::write(&file, small_budget(&tables)).unwrap();
    let (ok, stderr, took) = generate_krbvkq(&[("TBSERVER_CONFIG", &file)]);
    assert!(!ok, "generated KRBvKQ within 1 GiB?\n{stderr}");
    assert!(stderr.contains(&format!("configuration file {}", file.display())), "{stderr}");
    assert!(stderr.contains("refused before generating anything") && stderr.contains("MiB of memory"), "{stderr}");
    assert!(stderr.contains("builtin.max_memory_mib") || stderr.contains("1024 MiB"), "{stderr}");
    assert!(took < Duration::from_secs(5), "refused after {took:?}");
    assert!(is_empty(&tables), "something was written to {}", tables.display());
    report!("generate KRBvKQ with max_memory_mib = 1024 (TBSERVER_CONFIG): refused in {took:.2?}, nothing written");

    // The same with --config, and a flag naming a missing file is an error.
    let mut command = Command::new(env!("CARGO_BIN_EXE_tbserver"));
    let output = command.current_dir("/").args(["generate", "--config"]).arg(&file).arg("KRBvKQ").output().unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("refused before generating anything"));
    let output = Command::new(env!("CARGO_BIN_EXE_tbserver"))
        .args(["generate", "--config"])
        .arg(dir.join("missing.toml"))
        .arg("KRvK")
        .output()
        .unwrap();
    assert!(!output.status.success() && String::from_utf8_lossy(&output.stderr).contains("missing.toml"));
    assert!(is_empty(&tables));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_installed_binary_finds_its_configuration_in_xdg_config_home() {
    let dir = temp_dir("xdg");
    let tables = dir.join("tables");
    std::fs::create_dir_all(dir.join("config/tbserver")).unwrap();
    let file = dir.join("config/tbserver/tbserver.toml");
    std::fs::write(&file, small_budget(&tables)).unwrap();
    let (ok, stderr, _) = generate_krbvkq(&[("XDG_CONFIG_HOME", &dir.join("config")), ("HOME", &dir)]);
    assert!(!ok, "{stderr}");
    assert!(stderr.contains(&format!("configuration file {}", file.display())), "{stderr}");
    assert!(stderr.contains("refused before generating anything"), "{stderr}");
    assert!(is_empty(&tables));
    // Without XDG_CONFIG_HOME: ~/.config.
    let home_file = dir.join(".config/tbserver/tbserver.toml");
    std::fs::create_dir_all(home_file.parent().unwrap()).unwrap();
    std::fs::write(&home_file, small_budget(&tables)).unwrap();
    let (ok, stderr, _) = generate_krbvkq(&[("HOME", &dir)]);
    assert!(!ok && stderr.contains(&format!("configuration file {}", home_file.display())), "{stderr}");
    report!("configuration found in $XDG_CONFIG_HOME/tbserver and ~/.config/tbserver from /, and said");
    std::fs::remove_dir_all(&dir).unwrap();
}
