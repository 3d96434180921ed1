//! `tbserver convert`: tables rewritten in place with their values intact, a
//! damaged one named and left alone, exit status non-zero when any failed.

use tbserver::builtin::{Material, Store};

fn convert(args: &[&str]) -> (Option<i32>, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tbserver")).arg("convert").args(args).output().unwrap();
    (
        output.status.code(),
        format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr)),
    )
}

#[test]
fn convert_rewrites_good_tables_and_names_damaged_ones() {
    let dir = std::env::temp_dir().join(format!("tbserver-convert-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (krk, kqk) = (Material::parse("KRvK").unwrap(), Material::parse("KQvK").unwrap());
    let store = Store::new(&dir, true);
    let before: Vec<_> = {
        let t = store.table(&krk).unwrap();
        (0..t.layout.size as u32).map(|idx| t.values(idx)).collect()
    };
    store.table(&kqk).unwrap();
    drop(store);
    let (krk_path, kqk_path) = (dir.join("KRvK.tbsb"), dir.join("KQvK.tbsb"));
    let krk_bytes = std::fs::read(&krk_path).unwrap();
    let mut kqk_bytes = std::fs::read(&kqk_path).unwrap();
    let last = kqk_bytes.len() - 1;
    kqk_bytes[last] ^= 0x40;
    std::fs::write(&kqk_path, &kqk_bytes).unwrap();
    let dir_arg = dir.to_str().unwrap();

    // Current files are left alone unless a compression is named.
    let (status, out) = convert(&["--dir", dir_arg, "KRvK"]);
    assert_eq!(status, Some(0), "{out}");
    assert!(out.contains("KRvK: version 7 already"), "{out}");
    assert!(std::fs::read(&krk_path).unwrap() == krk_bytes);

    let (status, out) = convert(&["--dir", dir_arg, "--compression", "small"]);
    assert_eq!(status, Some(1), "{out}");
    assert!(out.contains("KRvK: version 7 -> 7") && out.contains("positions checked"), "{out}");
    assert!(out.contains("KQvK: not converted: block") && out.contains("checksum mismatch"), "{out}");
    assert!(out.contains("1 tables converted") && out.contains("1 failed"), "{out}");
    assert!(std::fs::read(&krk_path).unwrap() != krk_bytes, "KRvK not rewritten");
    assert!(std::fs::read(&kqk_path).unwrap() == kqk_bytes, "KQvK changed");
    let t = Store::new(&dir, false).table(&krk).unwrap();
    assert!((0..t.layout.size as u32).all(|idx| t.values(idx) == before[idx as usize]), "KRvK's values changed");

    let (status, out) = convert(&["--dir", dir_arg, "KXvK"]);
    assert_eq!(status, Some(1), "{out}");
    assert!(out.contains("KXvK: not a table name"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
