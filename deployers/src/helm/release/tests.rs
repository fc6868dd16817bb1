//! The release record against one written by the real Helm 3.19 (`helm upgrade` of a chart
//! with a hook, NOTES.txt, a CRD and a plain file, user labels), the codec's round trip, and
//! the storage on the in-memory cluster.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::codec::{self, RecordWrite};
use super::model::*;
use super::storage::{Storage, StorageError};
use crate::kubernetes::{ClusterClient, FakeCluster, ObjectRef};

const HELM_SECRET: &str = include_str!("testdata/helm-3.19-upgrade-secret.json");

fn helm_secret() -> Value {
    serde_json::from_str(HELM_SECRET).unwrap()
}

/// The JSON inside a Secret as Helm wrote it.
fn raw_json(secret: &Value) -> Value {
    use base64::Engine as _;
    use std::io::Read as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let text = b64
        .decode(secret["data"]["release"].as_str().unwrap())
        .unwrap();
    let gz = b64.decode(text).unwrap();
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(gz.as_slice())
        .read_to_end(&mut json)
        .unwrap();
    serde_json::from_slice(&json).unwrap()
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn decodes_a_record_written_by_helm_3_19() {
    let secret = helm_secret();
    let release = codec::from_secret(&secret).unwrap();
    assert_eq!(release.name, "r1");
    assert_eq!(release.version, 2);
    assert_eq!(release.namespace, "default");
    assert_eq!(release.status(), Status::Deployed);
    assert_eq!(
        release.labels,
        BTreeMap::from([("team".to_string(), "a".to_string())])
    );
    let info = release.info.as_ref().unwrap();
    assert_eq!(info.description, "Upgrade complete");
    assert_eq!(info.notes, "Thanks r1\n");
    assert!(info.deleted.is_none());
    assert!(info.first_deployed.unwrap() < info.last_deployed.unwrap());
    assert_eq!(release.chart_label(), "demo-0.1.0");
    let chart = release.chart.as_ref().unwrap();
    assert!(chart.lock.is_none() && chart.schema.is_none());
    let files: Vec<&str> = chart
        .files
        .iter()
        .flatten()
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(files, ["crds/crd.yaml", "extra.txt"]);
    assert_eq!(chart.files.as_ref().unwrap()[1].data, b"x: 1\n");
    assert_eq!(
        release.config,
        *json!({"f": "1.5", "replicas": 2}).as_object().unwrap()
    );
    assert!(
        release
            .manifest
            .starts_with("---\n# Source: demo/templates/configmap.yaml\n")
    );
    assert_eq!(release.hooks.len(), 1);
    let hook = &release.hooks[0];
    assert_eq!(hook.events, ["pre-upgrade", "post-install"]);
    assert_eq!(hook.weight, -5);
    assert_eq!(hook.delete_policies, ["before-hook-creation"]);
    assert_eq!(hook.last_run.phase, HookPhase::Succeeded);
    assert!(hook.last_run.started_at.is_some());
}

/// Re-encoding what Helm wrote gives Helm's JSON back, field for field (times with their
/// nanoseconds, `"deleted": ""`, `null` lock/schema, base64 files, hook order of fields).
#[test]
fn re_encoding_a_helm_record_gives_helms_json() {
    let secret = helm_secret();
    let release = codec::from_secret(&secret).unwrap();
    let ours = serde_json::to_value(&release).unwrap();
    assert_eq!(ours, raw_json(&secret));
    // And in Helm's field order.
    let text = serde_json::to_string(&release).unwrap();
    let order = [
        r#"{"name":"r1","info":{"#,
        r#"},"chart":{"metadata":{"#,
        r#"},"config":{"#,
        r#"},"manifest":"---"#,
        r#"","hooks":[{"#,
        r#"}],"version":2,"namespace":"default"}"#,
    ];
    let positions: Vec<usize> = order.iter().map(|k| text.find(k).unwrap()).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert!(text.contains(r#""deleted":"","description""#), "{text}");
}

#[test]
fn the_secret_has_helms_name_type_and_labels() {
    let mut release = codec::from_secret(&helm_secret()).unwrap();
    release.info_mut().status = Status::Superseded;
    let secret = codec::to_secret(&release, RecordWrite::Update, 1_795_827_535).unwrap();
    assert_eq!(secret["metadata"]["name"], "sh.helm.release.v1.r1.v2");
    assert_eq!(secret["metadata"]["namespace"], "default");
    assert_eq!(secret["type"], "helm.sh/release.v1");
    assert_eq!(
        secret["metadata"]["labels"],
        json!({"modifiedAt": "1795827535", "name": "r1", "owner": "helm",
            "status": "superseded", "team": "a", "version": "2"})
    );
    let created = codec::to_secret(&release, RecordWrite::Create, 7).unwrap();
    assert_eq!(created["metadata"]["labels"]["createdAt"], "7");
    assert!(created["metadata"]["labels"].get("modifiedAt").is_none());
    // Users cannot shadow the system labels.
    release.labels.insert("owner".into(), "me".into());
    let secret = codec::to_secret(&release, RecordWrite::Update, 1).unwrap();
    assert_eq!(secret["metadata"]["labels"]["owner"], "helm");
    assert_eq!(
        codec::from_secret(&secret).unwrap().status(),
        Status::Superseded
    );
}

#[test]
fn statuses_and_times_as_helm_writes_them() {
    for status in Status::ALL {
        assert_eq!(Status::parse(status.as_str()), status);
        assert_eq!(
            serde_json::to_value(status).unwrap(),
            json!(status.as_str())
        );
    }
    assert_eq!(Status::parse("something-new"), Status::Unknown);
    assert!(Status::PendingRollback.is_pending() && !Status::Failed.is_pending());
    let t: jiff::Timestamp = "2026-11-28T00:59:46.16867993Z".parse().unwrap();
    assert_eq!(go_rfc3339_nano(t), "2026-11-28T00:59:46.16867993Z");
    let t: jiff::Timestamp = "2026-11-28T00:59:46Z".parse().unwrap();
    assert_eq!(go_rfc3339_nano(t), "2026-11-28T00:59:46Z");
    // Helm on a host with a local zone writes an offset; Go's zero time from old encoders.
    let info: Info =
        serde_json::from_value(json!({"first_deployed": "2026-11-28T01:59:46.5+01:00",
        "deleted": "0001-01-01T00:00:00Z", "status": "failed"}))
        .unwrap();
    assert_eq!(
        go_rfc3339_nano(info.first_deployed.unwrap()),
        "2026-11-28T00:59:46.5Z"
    );
    assert!(info.deleted.is_none());
    let mut values = json!({"a": 1.0, "b": [2.5, 3.0], "c": {"d": -0.0}, "e": 7});
    go_numbers(&mut values);
    assert_eq!(
        serde_json::to_string(&values).unwrap(),
        r#"{"a":1,"b":[2.5,3],"c":{"d":0},"e":7}"#
    );
}

#[test]
fn records_before_compression_and_bad_data_are_told_apart() {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    // Helm 3.0 stored plain JSON.
    let plain = b64.encode(br#"{"name":"old","version":3,"info":{"status":"deployed"}}"#);
    let release = codec::decode("k", &plain).unwrap();
    assert_eq!((release.name.as_str(), release.version), ("old", 3));
    assert!(matches!(
        codec::decode("k", "%%%"),
        Err(codec::CodecError::Base64 { .. })
    ));
    let truncated = b64.encode([0x1f, 0x8b, 0x08, 0, 0]);
    assert!(matches!(
        codec::decode("k", &truncated),
        Err(codec::CodecError::Gzip { .. })
    ));
    let err = codec::decode("sh.helm.release.v1.x.v1", &b64.encode(b"[1]")).unwrap_err();
    assert!(err.to_string().contains("sh.helm.release.v1.x.v1"), "{err}");
    let missing = codec::from_secret(&json!({"metadata": {"name": "s"}, "data": {}})).unwrap_err();
    assert!(matches!(missing, codec::CodecError::MissingData { .. }));
}

fn arb_text() -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), "[a-z0-9 .\n\"é-]{0,24}"]
}

fn arb_time() -> impl Strategy<Value = Option<jiff::Timestamp>> {
    prop_oneof![
        Just(None),
        (0i64..4_000_000_000, 0i32..1_000_000_000)
            .prop_map(|(s, n)| jiff::Timestamp::new(s, n).ok()),
    ]
}

fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|i| json!(i)),
        (-1e9f64..1e9).prop_map(|f| json!(f)),
        arb_text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

prop_compose! {
    fn arb_release()(
        name in "[a-z][a-z0-9-]{0,12}",
        namespace in arb_text(),
        version in 0u32..50,
        status in prop::sample::select(Status::ALL.to_vec()),
        times in (arb_time(), arb_time(), arb_time()),
        description in arb_text(),
        notes in arb_text(),
        manifest in arb_text(),
        config in prop::collection::btree_map("[a-z]{1,5}", arb_value(), 0..4),
        files in prop::collection::vec(("[a-z/]{1,10}", prop::collection::vec(any::<u8>(), 0..20)), 0..3),
        schema in prop::option::of(prop::collection::vec(any::<u8>(), 0..10)),
        hooks in prop::collection::vec((arb_text(), any::<i64>(), arb_time()), 0..3),
        labels in prop::collection::btree_map("[a-z]{1,5}", "[a-z0-9]{0,5}", 0..3),
    ) -> Release {
        let files: Vec<ChartFile> = files.into_iter().map(|(name, data)| ChartFile { name, data }).collect();
        Release {
            name,
            info: Some(Info {
                first_deployed: times.0,
                last_deployed: times.1,
                deleted: times.2,
                description,
                status,
                notes,
            }),
            chart: Some(ChartRecord {
                metadata: Some(Metadata { name: "c".into(), version: "1.0.0".into(), ..Default::default() }),
                lock: None,
                templates: (!files.is_empty()).then(|| files.clone()),
                values: Some(Default::default()),
                schema,
                files: None,
            }),
            config: config.into_iter().collect(),
            manifest,
            hooks: hooks.into_iter().map(|(manifest, weight, started)| Hook {
                name: "h".into(),
                kind: "Job".into(),
                manifest,
                weight,
                events: vec!["post-install".into()],
                last_run: HookExecution { started_at: started, ..Default::default() },
                ..Default::default()
            }).collect(),
            version,
            namespace,
            labels: labels.into_iter().filter(|(k, _)| !codec::SYSTEM_LABELS.contains(&k.as_str())).collect(),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn codec_round_trips(release in arb_release()) {
        let secret = codec::to_secret(&release, RecordWrite::Create, 1).unwrap();
        let back = codec::from_secret(&secret).unwrap();
        // Numbers pass through JSON: compare as JSON, plus the labels.
        prop_assert_eq!(serde_json::to_value(&back).unwrap(), serde_json::to_value(&release).unwrap());
        prop_assert_eq!(&back.labels, &release.labels);
        prop_assert_eq!(back.status(), release.status());
        prop_assert_eq!(&secret["metadata"]["labels"]["version"], &json!(release.version.to_string()));
    }
}

fn revision(version: u32, status: Status) -> Release {
    Release {
        name: "web".into(),
        namespace: "apps".into(),
        version,
        info: Some(Info {
            status,
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn storage_keeps_history_and_prunes_beyond_the_limit() {
    let cluster = Arc::new(FakeCluster::new());
    let storage = Storage::new(cluster.as_ref(), "apps");
    block_on(async {
        for v in 1..=4 {
            storage
                .create(&revision(v, Status::Superseded), 0)
                .await
                .unwrap();
        }
        let mut deployed = revision(5, Status::Deployed);
        storage.create(&deployed, 3).await.unwrap();
        let history = storage.history("web").await.unwrap();
        let versions: Vec<u32> = history.releases.iter().map(|r| r.version).collect();
        assert_eq!(versions, [3, 4, 5]);
        assert_eq!(history.deployed().map(|r| r.version), Some(5));
        deployed.info_mut().status = Status::Superseded;
        storage.update(&deployed).await.unwrap();
        let stored = cluster
            .object(&ObjectRef::new(
                "v1",
                "Secret",
                "apps",
                "sh.helm.release.v1.web.v5",
            ))
            .unwrap();
        assert_eq!(stored["metadata"]["labels"]["status"], "superseded");
        assert!(stored["metadata"]["labels"].get("modifiedAt").is_some());
        // Another release and another namespace are not part of the history.
        let mut other = revision(1, Status::Deployed);
        other.name = "other".into();
        storage.create(&other, 0).await.unwrap();
        Storage::new(cluster.as_ref(), "elsewhere")
            .create(&revision(9, Status::Deployed), 0)
            .await
            .unwrap();
        assert_eq!(storage.history("web").await.unwrap().releases.len(), 3);
        storage.delete("web", 3).await.unwrap();
        storage.delete("web", 3).await.unwrap();
        assert_eq!(storage.history("web").await.unwrap().releases.len(), 2);
    });
}

#[test]
fn a_corrupt_latest_record_is_reported_with_its_name() {
    let cluster = Arc::new(FakeCluster::new());
    let storage = Storage::new(cluster.as_ref(), "apps");
    block_on(async {
        storage
            .create(&revision(1, Status::Deployed), 0)
            .await
            .unwrap();
        let mut bad =
            codec::to_secret(&revision(2, Status::Deployed), RecordWrite::Create, 1).unwrap();
        bad["data"]["release"] = json!("bm90IGd6aXA=");
        cluster.create(&bad).await.unwrap();
        let history = storage.history("web").await.unwrap();
        assert_eq!(history.releases.len(), 1);
        assert_eq!(history.next_revision(), 3);
        let err = storage.readable_history("web").await.unwrap_err();
        assert!(matches!(err, StorageError::CorruptLatest { .. }));
        let message = err.to_string();
        assert!(
            message.contains("sh.helm.release.v1.web.v2") && message.contains("revision 2"),
            "{message}"
        );
    });
}

#[test]
fn the_chart_record_carries_the_chart_lock_as_helm_marshals_it() {
    let file = |name: &str, data: &str| landscaper_charts::chart::File {
        name: name.into(),
        data: data.as_bytes().into(),
    };
    let chart = landscaper_charts::chart::load_files(
        vec![
            file("Chart.yaml", "apiVersion: v2\nname: top\nversion: 1.0.0\n"),
            file(
                "Chart.lock",
                "dependencies:\n- name: sub\n  repository: https://charts.example.com\n  version: 1.2.3\n- name: local\n  repository: file://../local\n  version: 0.1.0\ndigest: sha256:abc\ngenerated: \"2024-05-06T07:08:09.500+02:00\"\n",
            ),
        ],
        0,
    )
    .unwrap();
    let record = serde_json::to_string(&ChartRecord::of(&chart).lock).unwrap();
    assert_eq!(
        record,
        r#"{"generated":"2024-05-06T07:08:09.5+02:00","digest":"sha256:abc","dependencies":[{"name":"sub","version":"1.2.3","repository":"https://charts.example.com"},{"name":"local","version":"0.1.0","repository":"file://../local"}]}"#
    );
    // Without a lock the record's lock is null, as Helm's.
    let chart = landscaper_charts::chart::load_files(
        vec![file(
            "Chart.yaml",
            "apiVersion: v2\nname: top\nversion: 1.0.0\n",
        )],
        0,
    )
    .unwrap();
    assert_eq!(ChartRecord::of(&chart).lock, None);
}

#[test]
fn lock_times_are_written_as_go_marshals_them() {
    assert_eq!(go_time_text("2024-05-06T07:08:09Z"), "2024-05-06T07:08:09Z");
    assert_eq!(
        go_time_text("2024-05-06T07:08:09.120000+00:00"),
        "2024-05-06T07:08:09.12Z"
    );
    assert_eq!(
        go_time_text("2024-05-06T07:08:09.000-05:30"),
        "2024-05-06T07:08:09-05:30"
    );
    assert_eq!(go_time_text("not a time"), "not a time");
    let zero: Lock = serde_json::from_value(json!({"digest": "d"})).unwrap();
    assert_eq!(
        serde_json::to_value(&zero).unwrap()["generated"],
        "0001-01-01T00:00:00Z"
    );
}
