//! `tbserver verify DIR`: every bad file reported with its reason, good ones
//! passed, exit status non-zero when any is bad.

#[macro_use]
mod common;

use std::collections::BTreeMap;

use common::{gaviota_dir, syzygy_dir};
use tbserver::builtin::{Material, Store};

#[test]
fn verify_reports_each_bad_file() {
    let (Some(syzygy), Some(gaviota)) = (syzygy_dir(), gaviota_dir()) else { return };
    let dir = std::env::temp_dir().join(format!("tbserver-verify-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let copy = |from: &std::path::Path, name: &str| std::fs::read(from.join(name)).unwrap();
    let write = |name: &str, bytes: &[u8]| std::fs::write(dir.join(name), bytes).unwrap();
    for name in ["KQvK.rtbw", "KQvK.rtbz", "KRvK.rtbz", "KBNvK.rtbz"] {
        write(name, &copy(&syzygy, name));
    }
    write("KRvK.rtbw", &copy(&syzygy, "KQvK.rtbw")); // wrongly named
    write("KPvK.rtbw", b""); // zero length
    let kbnvk = copy(&syzygy, "KBNvK.rtbw");
    write("KBNvK.rtbw", &kbnvk[..16 + 64]); // right header, truncated
    write("kqk.gtb.cp4", &copy(&gaviota, "kqk.gtb.cp4"));
    write("krk.gtb.cp4", b"");
    // Built-in tables: one good, one with a flipped byte (CRC-32 mismatch).
    let store = Store::new(&dir, true);
    for name in ["KRvK", "KQvK"] {
        store.table(&Material::parse(name).unwrap()).unwrap();
    }
    let mut kqvk = std::fs::read(dir.join("KQvK.tbsb")).unwrap();
    let last = kqvk.len() - 1;
    kqvk[last] ^= 0x40;
    write("KQvK.tbsb", &kqvk);

    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tbserver"))
        .args(["verify", "--deep", "--samples", "200"])
        .arg(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let verdicts: BTreeMap<String, String> = stdout
        .lines()
        .filter_map(|l| {
            let (verdict, rest) = l.split_once(' ')?;
            let file = rest.trim().split(' ').next()?.rsplit('/').next()?.to_owned();
            Some((file, format!("{verdict} {rest}")))
        })
        .filter(|(_, v)| v.starts_with("ok") || v.starts_with("BAD"))
        .collect();
    let bad = |name: &str, reason: &str| {
        let v = &verdicts[name];
        assert!(v.starts_with("BAD") && v.contains(reason), "{name}: {v}");
    };
    bad("KRvK.rtbw", "wrongly named");
    bad("KPvK.rtbw", "unexpected size 0");
    bad("KBNvK.rtbw", "corrupted table");
    bad("krk.gtb.cp4", "empty file");
    bad("KQvK.tbsb", "checksum mismatch");
    for good in ["KQvK.rtbw", "KQvK.rtbz", "KRvK.rtbz", "KBNvK.rtbz", "kqk.gtb.cp4", "KRvK.tbsb"] {
        assert!(verdicts[good].starts_with("ok"), "{good}: {}", verdicts[good]);
    }
    assert!(verdicts["KQvK.rtbw"].contains("200 positions probed"), "{}", verdicts["KQvK.rtbw"]);
    assert!(stdout.contains("11 table files checked, 5 bad"), "{stdout}");
    report!("verify: 11 files, 5 bad reported with reasons, exit status 1");
    std::fs::remove_dir_all(&dir).ok();
}
