//! The cluster manager without the `mpi` feature: its settings are checked all the same.
#![cfg(not(feature = "mpi"))]

#[test]
fn the_cluster_settings_are_checked() {
    use vm_runtime::component::Settings;
    let settings = |v: toml::Value| Settings::from_pairs("cluster", &[("overlap", v)]);
    assert!(!vm_cluster::Options::from_settings(&settings(toml::Value::Boolean(false))).unwrap().overlap);
    let no_fuse = Settings::from_pairs("cluster", &[("fuse", toml::Value::Boolean(false))]);
    let options = vm_cluster::Options::from_settings(&no_fuse).unwrap();
    assert!(!options.fuse && options.overlap);
    let e = vm_cluster::Options::from_settings(&settings(toml::Value::Integer(1))).unwrap_err();
    assert!(e.to_string().contains("overlap must be true or false"), "{e}");
    let keys: Vec<&str> = vm_cluster::IMPLEMENTATION.settings.iter().map(|s| s.key).collect();
    assert_eq!(keys, ["overlap", "fuse", "profile"]);
}
