//! The `manifest` variants of the acceptance scenarios in `../shared/acceptance`: the real
//! binary and folder, deploy items of type `landscaper.gardener.cloud/kubernetes-manifest`, and
//! the workspace's Kubernetes test API server as the target cluster (the scenarios' `*.yaml.tpl`
//! Targets rendered with its kubeconfig). Each test checks the appliance's state and the
//! objects in the cluster against EXPECTED.md, and the rendered deploy items against
//! `expected/manifest.step-N.yaml`.

use std::time::Duration;

use landscaper_e2e::acceptance::{
    CONTEXT_LABEL, DEPENDS_ON_ANNOTATION, Job, Res, SUBINST_NAME_ANNOTATION, Scenario, annotation,
    describe_installation, gone, item_name, label, last_error, name_of, owned_by, patch, phase_of,
    same_target, short, str_at, uid_of, want,
};
use serde_json::{Value, json};

/// Manifest steps wait for the cluster's (simulated) readiness as well.
const STEP: Duration = Duration::from_secs(60);

const MANIFEST_TYPE: &str = "landscaper.gardener.cloud/kubernetes-manifest";

/// Checks a ConfigMap in the scenario's cluster.
fn check_config_map(s: &mut Scenario, namespace: &str, name: &str, data: &Value) {
    let found = s
        .cluster
        .as_ref()
        .and_then(|c| c.core(namespace, "configmaps", name));
    s.with(
        &format!("cluster: ConfigMap {namespace}/{name} data == {data}"),
        found.as_ref(),
        |cm| {
            (cm["data"] == *data)
                .then_some(())
                .ok_or_else(|| format!("data {}", cm["data"]))
        },
    );
}

/// A ConfigMap/Secret/... of the scenario's cluster.
fn cluster_core(s: &Scenario, namespace: &str, plural: &str, name: &str) -> Option<Value> {
    s.cluster
        .as_ref()
        .and_then(|c| c.core(namespace, plural, name))
}

/// A row: the core object `plural` `namespace/name` is absent from the cluster.
fn check_cluster_absent(s: &mut Scenario, namespace: &str, plural: &str, name: &str) {
    let found = cluster_core(s, namespace, plural, name);
    s.ok(
        &format!("cluster: {plural} {namespace}/{name} absent"),
        found.is_none(),
        || format!("found {}", found.as_ref().map(short).unwrap_or_default()),
    );
}

/// `(kind, namespace, name)` of each entry of `status.providerStatus.managedResources`, sorted.
fn managed_resources(di: &Value) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = di["status"]["providerStatus"]["managedResources"]
        .as_array()
        .map(|m| {
            m.iter()
                .map(|r| {
                    let res = &r["resource"];
                    (
                        str_at(res, "/kind").to_string(),
                        str_at(res, "/namespace").to_string(),
                        str_at(res, "/name").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Rows about a manifest deploy item: type, target, phase and exactly the managed resources
/// `managed` (`(kind, namespace, name)`).
fn check_manifest_item(
    s: &mut Scenario,
    item: &str,
    di: Option<&Value>,
    target: Option<&str>,
    phase: &str,
    managed: &[(&str, &str, &str)],
) {
    let mut want: Vec<(String, String, String)> = managed
        .iter()
        .map(|(k, n, m)| (k.to_string(), n.to_string(), m.to_string()))
        .collect();
    want.sort();
    s.with(
        &format!(
            "DeployItem {item}: kubernetes-manifest, target {}, {phase}, managedResources {managed:?}",
            target.unwrap_or("(context)")
        ),
        di,
        |d| {
            if str_at(d, "/spec/type") != MANIFEST_TYPE {
                return Err(format!("spec.type {}", d["spec"]["type"]));
            }
            if target.is_some_and(|t| str_at(d, "/spec/target/name") != t) {
                return Err(format!("spec.target {}", d["spec"]["target"]));
            }
            if phase_of(d) != phase {
                return Err(format!(
                    "phase {}, lastError {}",
                    phase_of(d),
                    short(&d["status"]["lastError"])
                ));
            }
            if managed_resources(d) != want {
                return Err(format!("providerStatus {}", d["status"]["providerStatus"]));
            }
            Ok(())
        },
    );
}

#[test]
fn scenario_01_single_deployitem_manifest() {
    let Some(mut s) = Scenario::start("01", "manifest") else {
        return;
    };
    s.apply_step(1);
    s.settle(&[want("hello-world", "Succeeded", Job::New)], STEP);
    let inst = s.must("hello-world");
    s.check_installation(&inst, "Succeeded");
    s.check_execution_refs(&inst, &["default-deploy-item"]);
    let di = s.deploy_item(&inst, "default-deploy-item");
    s.with(
        "DeployItem default-deploy-item: kubernetes-manifest, target my-cluster, Succeeded, deployer-type annotation, managedResources",
        di.as_ref(),
        |d| {
            if str_at(d, "/spec/type") != MANIFEST_TYPE {
                return Err(format!("spec.type {}", d["spec"]["type"]));
            }
            if str_at(d, "/spec/target/name") != "my-cluster" {
                return Err(format!("spec.target {}", d["spec"]["target"]));
            }
            if phase_of(d) != "Succeeded" {
                return Err(format!("phase {}, lastError {}", phase_of(d), d["status"]["lastError"]));
            }
            if annotation(d, "landscaper.gardener.cloud/deployer-type") != Some(MANIFEST_TYPE) {
                return Err(format!("annotations {}", d["metadata"]["annotations"]));
            }
            let managed = &d["status"]["providerStatus"]["managedResources"];
            let configmap = managed
                .as_array()
                .and_then(|m| m.iter().find(|r| r["resource"]["kind"] == "ConfigMap"));
            match configmap {
                Some(r) if r["resource"]["name"] == "hello-world"
                    && r["resource"]["namespace"] == "acc-01"
                    && r["policy"] == "manage" => Ok(()),
                _ => Err(format!("providerStatus {}", d["status"]["providerStatus"])),
            }
        },
    );
    check_config_map(
        &mut s,
        "acc-01",
        "hello-world",
        &json!({"testData": "hello"}),
    );
    s.check_oracle(1);
    s.finish();
}

#[test]
fn scenario_02_multiple_deployitems_dependson_manifest() {
    let Some(mut s) = Scenario::start("02", "manifest") else {
        return;
    };
    s.apply_step(1);
    s.settle(&[want("hello-world", "Succeeded", Job::New)], STEP);
    let inst = s.must("hello-world");
    s.check_installation(&inst, "Succeeded");
    let exec = s.execution_of(&inst);
    s.check_phase("Execution hello-world", exec.as_ref(), "Succeeded");
    s.check_execution_refs(&inst, &["deploy-item-1", "deploy-item-2"]);
    let di1 = s.deploy_item(&inst, "deploy-item-1");
    let di2 = s.deploy_item(&inst, "deploy-item-2");
    for (di, item, target, depends, name, data) in [
        (
            &di1,
            "deploy-item-1",
            "my-cluster-1",
            "",
            "hello-world-1",
            "foo",
        ),
        (
            &di2,
            "deploy-item-2",
            "my-cluster-2",
            "deploy-item-1",
            "hello-world-2",
            "bar",
        ),
    ] {
        check_manifest_item(
            &mut s,
            item,
            di.as_ref(),
            Some(target),
            "Succeeded",
            &[("ConfigMap", "acc-02", name)],
        );
        s.with(
            &format!("DeployItem {item}: annotation dependsOn {depends:?}"),
            di.as_ref(),
            |d| {
                (annotation(d, DEPENDS_ON_ANNOTATION) == Some(depends))
                    .then_some(())
                    .ok_or_else(|| format!("annotations {}", d["metadata"]["annotations"]))
            },
        );
        check_config_map(&mut s, "acc-02", name, &json!({ "testData": data }));
    }
    s.check_item_order(&inst, "deploy-item-2", &["deploy-item-1"]);
    let times = (
        di1.as_ref()
            .map(|d| str_at(d, "/status/transitionTimes/finishedTime").to_string()),
        di2.as_ref()
            .map(|d| str_at(d, "/status/transitionTimes/initTime").to_string()),
    );
    s.ok(
        "di2.status.transitionTimes.initTime >= di1.status.transitionTimes.finishedTime",
        matches!(&times, (Some(f), Some(i)) if !f.is_empty() && !i.is_empty() && i >= f),
        || format!("{times:?}"),
    );
    s.check_oracle(1);
    s.finish();
}

/// Rows of scenario 03 that repeat in every step.
fn check_03(s: &mut Scenario, data: Value) {
    let inst = s.must("import-export-1");
    s.check_data_object("export-do-name", &json!("cm-example-x"));
    s.check_data_object("export-do-data", &data);
    for name in ["export-do-name", "export-do-data"] {
        let obj = s.get(Res::DataObject, name);
        s.with(
            &format!("DataObject {name}: export labels and ownerReference → import-export-1"),
            obj.as_ref(),
            |d| {
                let ok = label(d, "data.landscaper.gardener.cloud/sourceType") == Some("export")
                    && label(d, "data.landscaper.gardener.cloud/source")
                        == Some("Inst.import-export-1")
                    && label(d, "data.landscaper.gardener.cloud/key") == Some(name)
                    && label(d, "data.landscaper.gardener.cloud/context")
                        .unwrap_or("")
                        .is_empty()
                    && owned_by(d, "Installation", "import-export-1");
                ok.then_some(()).ok_or_else(|| {
                    format!(
                        "labels {}, ownerReferences {}",
                        d["metadata"]["labels"], d["metadata"]["ownerReferences"]
                    )
                })
            },
        );
    }
    let di = s.deploy_item(&inst, "default");
    check_manifest_item(
        s,
        "default",
        di.as_ref(),
        Some("my-cluster"),
        "Succeeded",
        &[("ConfigMap", "acc-03", "cm-example")],
    );
    check_config_map(s, "acc-03", "cm-example", &data);
}

#[test]
fn scenario_03_import_parameters_dataobject_configmap_secret_manifest() {
    let Some(mut s) = Scenario::start("03", "manifest") else {
        return;
    };
    s.apply_step(1);
    s.settle(&[want("import-export-1", "Succeeded", Job::New)], STEP);
    let inst = s.must("import-export-1");
    s.check_installation(&inst, "Succeeded");
    check_03(
        &mut s,
        json!({"foo": "bar", "key1": "value1", "key2": "value2"}),
    );
    s.check_oracle(1);
    let generation = inst["metadata"]["generation"].as_i64().unwrap_or(0);
    let di_uid = s
        .deploy_item(&inst, "default")
        .map(|d| uid_of(&d).to_string());

    for (step, data) in [
        (2, json!({"foo": "bar", "key3": "value3", "key4": "value4"})),
        (3, json!({"foo": "bar", "key5": "value5", "key6": "value6"})),
    ] {
        s.apply_step(step);
        s.settle(&[want("import-export-1", "Succeeded", Job::New)], STEP);
        let inst = s.must("import-export-1");
        s.check_installation(&inst, "Succeeded");
        s.eq(
            "Installation import-export-1: generation advanced by 1 per step",
            &inst["metadata"]["generation"],
            &json!(generation + step as i64 - 1),
        );
        // The ConfigMap's data is replaced (`updateStrategy: update`): the keys of the
        // previous step are gone.
        check_03(&mut s, data);
        let uid = s
            .deploy_item(&inst, "default")
            .map(|d| uid_of(&d).to_string());
        s.ok(
            "DeployItem default: same object as in step 1 (same UID)",
            uid.is_some() && uid == di_uid,
            || format!("uid {uid:?}, step 1 {di_uid:?}"),
        );
        s.check_oracle(step);
    }
    s.finish();
}

#[test]
fn scenario_06_subinstallations_dataflow_manifest() {
    let Some(mut s) = Scenario::start("06", "manifest") else {
        return;
    };
    s.apply_step(1);
    s.settle(
        &[
            want("export-import", "Succeeded", Job::New),
            want("root-1", "Succeeded", Job::New),
            want("root-2", "Succeeded", Job::New),
        ],
        STEP,
    );
    // Part A
    let parent = s.must("export-import");
    s.check_installation(&parent, "Succeeded");
    s.check_installation_refs(&parent, 3);
    s.check_absent(Res::Execution, "export-import");
    for (i, cm) in [
        (1, "example-configmap"),
        (2, "example-configmap-x"),
        (3, "example-configmap-x-x"),
    ] {
        let template = format!("subinst{i}");
        let sub = s.subinstallation("export-import", &template);
        s.with(
            &format!("subinstallation {template}: ownerReference → export-import, Succeeded"),
            sub.as_ref(),
            |sub| {
                (owned_by(sub, "Installation", "export-import") && phase_of(sub) == "Succeeded")
                    .then_some(())
                    .ok_or_else(|| describe_installation(sub))
            },
        );
        let Some(sub) = sub else { continue };
        s.check_execution_refs(&sub, &["default-deploy-item"]);
        let di = s.deploy_item(&sub, "default-deploy-item");
        check_manifest_item(
            &mut s,
            &format!("{template}/default-deploy-item"),
            di.as_ref(),
            None,
            "Succeeded",
            &[("ConfigMap", "acc-06", cm)],
        );
        check_config_map(&mut s, "acc-06", cm, &json!({"foo": "bar"}));
    }
    s.check_sub_order("export-import", "subinst2", &["subinst1"]);
    s.check_sub_order("export-import", "subinst3", &["subinst2"]);
    // subinst3 exports configmap-name-4, which nobody deploys.
    check_cluster_absent(&mut s, "acc-06", "configmaps", "example-configmap-x-x-x");
    s.check_data_object(
        "do-configmap-names",
        &json!([
            "example-configmap",
            "example-configmap-x",
            "example-configmap-x-x"
        ]),
    );
    for (key, value) in [
        ("configmap-name-base", "example-configmap"),
        ("configmap-name-2", "example-configmap-x"),
        ("configmap-name-3", "example-configmap-x-x"),
        ("configmap-name-4", "example-configmap-x-x-x"),
    ] {
        s.check_context_data_object("export-import", key, &json!(value));
    }
    // Part B
    let root1 = s.must("root-1");
    let root2 = s.must("root-2");
    s.check_installation(&root1, "Succeeded");
    s.check_installation(&root2, "Succeeded");
    for (inst, cm) in [(&root1, "cm-example"), (&root2, "cm-example-x")] {
        let di = s.deploy_item(inst, "default");
        check_manifest_item(
            &mut s,
            &format!("{}/default", name_of(inst)),
            di.as_ref(),
            Some("my-cluster"),
            "Succeeded",
            &[("ConfigMap", "acc-06", cm)],
        );
        check_config_map(
            &mut s,
            "acc-06",
            cm,
            &json!({"foo": "bar", "key1": "value1"}),
        );
    }
    s.check_data_object("do-name-2", &json!("cm-example-x"));
    s.check_data_object("do-data-2", &json!({"foo": "bar", "key1": "value1"}));
    s.check_data_object("do-name-3", &json!("cm-example-x-x"));
    s.check_data_object("do-data-3", &json!({"foo": "bar", "key1": "value1"}));
    let root1_done =
        s.recorder
            .job_finished(Res::Installation, "root-1", str_at(&root1, "/status/jobID"));
    let root2_triggered =
        s.recorder
            .triggered(Res::Installation, "root-2", str_at(&root2, "/status/jobID"));
    s.check_before(
        "root-2 triggered (by its predecessor) only after root-1 finished",
        ("root-1 finished", root1_done),
        ("root-2 got its job", root2_triggered),
    );
    let failed = s.recorder.first(Res::Installation, "root-2", |e| {
        phase_of(&e.object) == "Failed"
    });
    s.ok("root-2 never reached Failed", failed.is_none(), || {
        format!("Failed at revision {failed:?} (root-1 finished at {root1_done:?})")
    });
    s.check_oracle(1);
    s.finish();
}

#[test]
fn scenario_09_target_map_deployitems_manifest() {
    let Some(mut s) = Scenario::start("09", "manifest") else {
        return;
    };
    let colors: [(&str, &str, &str); 5] = [
        ("blue", "100m", "100Mi"),
        ("green", "120m", "120Mi"),
        ("yellow", "140m", "140Mi"),
        ("orange", "160m", "160Mi"),
        ("red", "180m", "180Mi"),
    ];
    let check_items = |s: &mut Scenario, inst: &Value, keys: &[&str]| -> Vec<Value> {
        let names: Vec<String> = keys.iter().map(|k| format!("di-{k}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let items = s.check_items(inst, &names, "Succeeded");
        for key in keys {
            let (_, cpu, memory) = colors.iter().find(|c| c.0 == *key).unwrap();
            let di = items.iter().find(|d| item_name(d) == format!("di-{key}"));
            let cm = format!("multiple-items-{key}");
            check_manifest_item(
                s,
                &format!("di-{key}"),
                di,
                Some(&format!("cluster-{key}")),
                "Succeeded",
                &[("ConfigMap", "acc-09", &cm)],
            );
            check_config_map(
                s,
                "acc-09",
                &cm,
                &json!({"color": key, "cpu": cpu, "memory": memory}),
            );
        }
        items
    };
    s.apply_step(1);
    s.settle(&[want("multiple-items", "Succeeded", Job::New)], STEP);
    let inst = s.must("multiple-items");
    s.check_installation(&inst, "Succeeded");
    let items = check_items(&mut s, &inst, &["blue", "green", "red"]);
    for key in ["yellow", "orange"] {
        check_cluster_absent(
            &mut s,
            "acc-09",
            "configmaps",
            &format!("multiple-items-{key}"),
        );
    }
    let before: Vec<(String, String, String, String)> = items
        .iter()
        .map(|d| {
            (
                item_name(d).to_string(),
                name_of(d).to_string(),
                uid_of(d).to_string(),
                str_at(d, "/status/jobID").to_string(),
            )
        })
        .collect();
    let blue_uid = cluster_core(&s, "acc-09", "configmaps", "multiple-items-blue")
        .map(|cm| uid_of(&cm).to_string());
    s.check_oracle(1);

    s.apply_step(2);
    s.settle(&[want("multiple-items", "Succeeded", Job::New)], STEP);
    let inst = s.must("multiple-items");
    s.check_installation(&inst, "Succeeded");
    let items = check_items(&mut s, &inst, &["blue", "red", "yellow", "orange"]);
    let green = before
        .iter()
        .find(|b| b.0 == "di-green")
        .map(|b| b.1.clone());
    s.ok(
        "DeployItem di-green deleted",
        green
            .as_ref()
            .is_some_and(|g| s.get(Res::DeployItem, g).is_none()),
        || format!("{green:?}"),
    );
    check_cluster_absent(&mut s, "acc-09", "configmaps", "multiple-items-green");
    let blue_uid_now = cluster_core(&s, "acc-09", "configmaps", "multiple-items-blue")
        .map(|cm| uid_of(&cm).to_string());
    s.ok(
        "cluster: ConfigMap acc-09/multiple-items-blue updated, not recreated (same UID)",
        blue_uid.as_ref().is_some_and(|u| !u.is_empty()) && blue_uid == blue_uid_now,
        || format!("step 1 {blue_uid:?}, now {blue_uid_now:?}"),
    );
    for key in ["di-blue", "di-red"] {
        let old = before.iter().find(|b| b.0 == key);
        let new = items.iter().find(|d| item_name(d) == key);
        s.ok(
            &format!("DeployItem {key}: same object as in step 1 (name, UID), new jobID"),
            matches!((old, new), (Some(o), Some(n))
                if o.1 == name_of(n) && o.2 == uid_of(n) && o.3 != str_at(n, "/status/jobID")),
            || {
                format!(
                    "step 1 {old:?}, now {:?}",
                    new.map(|n| (name_of(n), uid_of(n), str_at(n, "/status/jobID")))
                )
            },
        );
    }
    let exec_job = s
        .execution_of(&inst)
        .map(|e| str_at(&e, "/status/jobID").to_string())
        .unwrap_or_default();
    let green_deleted = green
        .as_ref()
        .and_then(|g| s.recorder.deleted(Res::DeployItem, g));
    let first_trigger = items
        .iter()
        .filter_map(|d| s.recorder.triggered(Res::DeployItem, name_of(d), &exec_job))
        .min();
    s.check_before(
        "orphaned di-green deleted before the new or updated items were triggered",
        ("di-green deleted", green_deleted),
        ("first item triggered", first_trigger),
    );
    s.check_oracle(2);
    s.finish();
}

#[test]
fn scenario_13_deletion_manifest() {
    let Some(mut s) = Scenario::start("13", "manifest") else {
        return;
    };
    s.apply_step(1);
    s.settle(
        &[
            want("inline", "Succeeded", Job::New),
            want("inline-export", "Succeeded", Job::New),
            want("hello-world", "Succeeded", Job::New),
            want("keep-resources", "Succeeded", Job::New),
        ],
        STEP,
    );
    let inline = s.must("inline");
    s.check_installation(&inline, "Succeeded");
    let items = s.check_items(&inline, &["item-1", "item-2", "item-3"], "Succeeded");
    for (item, cm) in [("item-1", "cm-1"), ("item-2", "cm-2"), ("item-3", "cm-3")] {
        let di = items.iter().find(|d| item_name(d) == item);
        check_manifest_item(
            &mut s,
            &format!("inline/{item}"),
            di,
            Some("my-cluster"),
            "Succeeded",
            &[("ConfigMap", "acc-13", cm)],
        );
        check_config_map(&mut s, "acc-13", cm, &json!({"foo": "bar"}));
    }
    for (item, depends) in [("item-2", "item-1"), ("item-3", "item-1,item-2")] {
        let di = items.iter().find(|d| item_name(d) == item);
        s.with(
            &format!("inline: DeployItem {item} dependsOn {depends}"),
            di,
            |d| {
                let mut have: Vec<&str> = annotation(d, DEPENDS_ON_ANNOTATION)
                    .unwrap_or("")
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .collect();
                have.sort();
                (have.join(",") == depends)
                    .then_some(())
                    .ok_or_else(|| format!("{:?}", annotation(d, DEPENDS_ON_ANNOTATION)))
            },
        );
    }
    let inline_items: Vec<(String, String)> = items
        .iter()
        .map(|d| (item_name(d).to_string(), name_of(d).to_string()))
        .collect();
    let export = s.must("inline-export");
    s.check_installation(&export, "Succeeded");
    let di = s.deploy_item(&export, "item-1");
    check_manifest_item(
        &mut s,
        "inline-export/item-1",
        di.as_ref(),
        Some("my-cluster"),
        "Succeeded",
        &[("ConfigMap", "acc-13", "cm-export")],
    );
    check_config_map(&mut s, "acc-13", "cm-export", &json!({"key1": "value1"}));
    s.check_data_object("do-entry-out", &json!({"key": "key2", "value": "value2"}));
    let out = s.get(Res::DataObject, "do-entry-out");
    s.with(
        "DataObject do-entry-out: ownerReference → inline-export",
        out.as_ref(),
        |d| {
            owned_by(d, "Installation", "inline-export")
                .then_some(())
                .ok_or_else(|| format!("{}", d["metadata"]["ownerReferences"]))
        },
    );
    let hello = s.must("hello-world");
    s.check_installation(&hello, "Succeeded");
    let di = s.deploy_item(&hello, "default-deploy-item");
    check_manifest_item(
        &mut s,
        "hello-world/default-deploy-item",
        di.as_ref(),
        Some("my-cluster-b"),
        "Succeeded",
        &[("ConfigMap", "acc-13", "hello-world")],
    );
    check_config_map(
        &mut s,
        "acc-13",
        "hello-world",
        &json!({"testData": "hello"}),
    );
    let hello_di = di.map(|d| name_of(&d).to_string()).unwrap_or_default();
    let keep = s.must("keep-resources");
    s.check_installation(&keep, "Succeeded");
    s.eq(
        "keep-resources: annotation delete-without-uninstall \"true\"",
        &json!(annotation(
            &keep,
            "landscaper.gardener.cloud/delete-without-uninstall"
        )),
        &json!("true"),
    );
    let di = s.deploy_item(&keep, "default-deploy-item");
    check_manifest_item(
        &mut s,
        "keep-resources/default-deploy-item",
        di.as_ref(),
        Some("my-cluster"),
        "Succeeded",
        &[("ConfigMap", "acc-13", "keep-me")],
    );
    check_config_map(&mut s, "acc-13", "keep-me", &json!({"testData": "hello"}));
    let keep_di = di.map(|d| name_of(&d).to_string()).unwrap_or_default();
    let export_items: Vec<String> = s
        .deploy_items_of(&export)
        .iter()
        .map(|d| name_of(d).to_string())
        .collect();
    s.check_oracle(1);
    let hello_job = str_at(&hello, "/status/jobID").to_string();

    // Step 2
    s.apply_step(2);
    s.settle(
        &[
            gone("inline"),
            gone("inline-export"),
            gone("keep-resources"),
            want("hello-world", "Succeeded", Job::Same),
        ],
        STEP,
    );
    let mut leftovers = Vec::new();
    for exec in ["inline", "inline-export", "keep-resources"] {
        if s.get(Res::Execution, exec).is_some() {
            leftovers.push(format!("Execution {exec}"));
        }
    }
    for di in inline_items
        .iter()
        .map(|(_, n)| n)
        .chain(&export_items)
        .chain([&keep_di])
    {
        if s.get(Res::DeployItem, di).is_some() {
            leftovers.push(format!("DeployItem {di}"));
        }
    }
    s.ok(
        "inline, inline-export, keep-resources: Installations, Executions and DeployItems gone",
        leftovers.is_empty(),
        || leftovers.join(", "),
    );
    let object = |item: &str| {
        inline_items
            .iter()
            .find(|(i, _)| i == item)
            .map(|(_, n)| n.clone())
            .unwrap_or_default()
    };
    let (i1, i2, i3) = (object("item-1"), object("item-2"), object("item-3"));
    let r = &s.recorder;
    let (d1, d2, d3) = (
        r.deleted(Res::DeployItem, &i1),
        r.deleted(Res::DeployItem, &i2),
        r.deleted(Res::DeployItem, &i3),
    );
    let delete_job = r
        .events(Res::Execution, "inline")
        .iter()
        .rev()
        .map(|e| str_at(&e.object, "/status/jobID").to_string())
        .find(|j| !j.is_empty())
        .unwrap_or_default();
    let (t1, t2) = (
        r.triggered(Res::DeployItem, &i1, &delete_job),
        r.triggered(Res::DeployItem, &i2, &delete_job),
    );
    s.check_before(
        "inline deletion order: item-2 triggered for deletion only after item-3 is gone",
        ("item-3 gone", d3),
        ("item-2 triggered for deletion", t2),
    );
    s.check_before(
        "inline deletion order: item-1 triggered for deletion only after item-2 is gone",
        ("item-2 gone", d2),
        ("item-1 triggered for deletion", t1),
    );
    s.ok(
        "inline deletion order: item-3, then item-2, then item-1 removed",
        matches!((d1, d2, d3), (Some(a), Some(b), Some(c)) if c < b && b < a),
        || format!("deleted at revisions item-1 {d1:?}, item-2 {d2:?}, item-3 {d3:?}"),
    );
    for cm in ["cm-1", "cm-2", "cm-3", "cm-export"] {
        check_cluster_absent(&mut s, "acc-13", "configmaps", cm);
    }
    s.check_absent(Res::DataObject, "do-entry-out");
    for name in ["do-entry-in", "do-namespace"] {
        let d = s.get(Res::DataObject, name);
        s.ok(
            &format!("DataObject {name} remains (not owned)"),
            d.is_some(),
            || "gone".into(),
        );
    }
    // delete-without-uninstall: the ConfigMap stays in the cluster.
    check_config_map(&mut s, "acc-13", "keep-me", &json!({"testData": "hello"}));
    s.check_absent(Res::Target, "my-cluster-b");
    let hello = s.must("hello-world");
    s.ok(
        "hello-world: untouched, still Succeeded",
        phase_of(&hello) == "Succeeded"
            && str_at(&hello, "/status/jobID") == hello_job
            && hello.pointer("/metadata/deletionTimestamp").is_none(),
        || describe_installation(&hello),
    );
    check_config_map(
        &mut s,
        "acc-13",
        "hello-world",
        &json!({"testData": "hello"}),
    );

    // Step 3
    s.apply_step(3);
    s.settle(&[want("hello-world", "DeleteFailed", Job::Any)], STEP);
    let hello = s.must("hello-world");
    s.ok(
        "hello-world: DeleteFailed, still exists, marked for deletion",
        phase_of(&hello) == "DeleteFailed"
            && hello.pointer("/metadata/deletionTimestamp").is_some(),
        || describe_installation(&hello),
    );
    let di = s.get(Res::DeployItem, &hello_di);
    s.with(
        "hello-world: DeployItem DeleteFailed, missing target (reason NoTargetFound)",
        di.as_ref(),
        |d| {
            (phase_of(d) == "DeleteFailed"
                && (str_at(d, "/status/lastError/reason") == "NoTargetFound"
                    || last_error(d).contains("missing target")))
            .then_some(())
            .ok_or_else(|| describe_installation(d))
        },
    );
    let exec = s.get(Res::Execution, "hello-world");
    s.check_phase("hello-world: Execution", exec.as_ref(), "DeleteFailed");
    check_config_map(
        &mut s,
        "acc-13",
        "hello-world",
        &json!({"testData": "hello"}),
    );

    // Step 4: Target my-cluster-b restored, then a reconcile requested on the deleting
    // installation through the API (what `kubectl annotate … operation=reconcile` sends).
    s.apply_step(4);
    let path = format!("{}/hello-world", Res::Installation.path());
    let result = patch(
        &s.daemon,
        &path,
        &json!({"metadata": {"annotations": {"landscaper.gardener.cloud/operation": "reconcile"}}}),
    );
    let accepted = matches!(&result, Ok((code, _)) if (200..300).contains(code));
    s.ok(
        "trigger: annotate installation hello-world operation=reconcile through the API",
        accepted,
        || format!("PATCH {path}: {result:?}"),
    );
    if accepted {
        s.settle(&[gone("hello-world")], STEP);
        s.check_absent(Res::Execution, "hello-world");
        s.check_absent(Res::DeployItem, &hello_di);
        check_cluster_absent(&mut s, "acc-13", "configmaps", "hello-world");
    }
    s.finish();
}

#[test]
fn scenario_04_import_data_mappings_spiff_manifest() {
    // Part A (echo-server) is mock only.
    let Some(mut s) = Scenario::start("04", "manifest") else {
        return;
    };
    s.apply_step(1);
    s.settle(&[want("import-export-1", "Succeeded", Job::New)], STEP);
    let inst = s.must("import-export-1");
    s.check_installation(&inst, "Succeeded");
    let data = json!({"foo": "bar", "key7": "value7", "key8": "value8"});
    let di = s.deploy_item(&inst, "default");
    check_manifest_item(
        &mut s,
        "default",
        di.as_ref(),
        Some("my-cluster"),
        "Succeeded",
        &[("ConfigMap", "acc-04", "cm-example")],
    );
    check_config_map(&mut s, "acc-04", "cm-example", &data);
    s.check_data_object("export-do-name", &json!("cm-example-x"));
    s.check_data_object("export-do-data", &data);
    s.check_absent(Res::Installation, "echo-server");
    s.check_oracle(1);
    s.finish();
}

/// Standard base64 (with padding) decoded to a UTF-8 string.
fn b64_decode(text: &str) -> Option<String> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bits = 0u32;
    let mut n = 0;
    let mut out = Vec::new();
    for c in text.trim_end_matches('=').bytes() {
        let v = ALPHABET.iter().position(|&a| a == c)? as u32;
        bits = (bits << 6) | v;
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
            bits &= (1 << n) - 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Part B of scenario 05: exported Targets, the targetList import and its ConfigMap.
fn check_05_part_b(s: &mut Scenario) {
    // The API redacts a Target's kubeconfig; its value is checked through cm-kubeconfigs.
    for (exporter, target) in [
        ("target-exporter-1", "target-1"),
        ("target-exporter-2", "target-2"),
    ] {
        let inst = s.must(exporter);
        s.check_installation(&inst, "Succeeded");
        s.ok(
            &format!("Installation {exporter}: no executionRef"),
            inst.pointer("/status/executionRef")
                .is_none_or(Value::is_null),
            || format!("executionRef {}", inst["status"]["executionRef"]),
        );
        s.check_absent(Res::Execution, exporter);
        let t = s.get(Res::Target, target);
        s.with(
            &format!("Target {target}: type kubernetes-cluster, labels ⊇ {{key2: value2}}, annotations ⊇ {{key1: value1}}, ownerReference → {exporter}"),
            t.as_ref(),
            |t| {
                let ok = t["spec"]["type"] == "landscaper.gardener.cloud/kubernetes-cluster"
                    && label(t, "key2") == Some("value2")
                    && annotation(t, "key1") == Some("value1")
                    && owned_by(t, "Installation", exporter);
                ok.then_some(()).ok_or_else(|| format!("{t}"))
            },
        );
    }
    let importer = s.must("target-importer");
    s.check_installation(&importer, "Succeeded");
    let exporters = vec![
        s.installation("target-exporter-1"),
        s.installation("target-exporter-2"),
    ];
    s.check_started_after(
        "target-importer started only after both exporters finished",
        Some(importer.clone()),
        &exporters,
    );
    let di = s.deploy_item(&importer, "default");
    check_manifest_item(
        s,
        "target-importer/default",
        di.as_ref(),
        Some("my-cluster"),
        "Succeeded",
        &[("ConfigMap", "acc-05", "cm-kubeconfigs")],
    );
    check_config_map(
        s,
        "acc-05",
        "cm-kubeconfigs",
        &json!({"target-1": "dummy kubeconfig 1", "target-2": "dummy kubeconfig 2"}),
    );
}

/// Part A of scenario 05 up to the deploy item: the ServiceAccount and its token Secret in the
/// cluster, and the item's export (`.data.token` of the Secret); the token, decoded.
fn check_05_part_a_item(s: &mut Scenario) -> Option<String> {
    let inst = s.must("export-token");
    let di = s.deploy_item(&inst, "default-deploy-item");
    check_manifest_item(
        s,
        "export-token/default-deploy-item",
        di.as_ref(),
        Some("my-cluster"),
        "Succeeded",
        &[
            ("Secret", "acc-05", "test-secret"),
            ("ServiceAccount", "acc-05", "test-service-account"),
        ],
    );
    let account = cluster_core(s, "acc-05", "serviceaccounts", "test-service-account");
    s.ok(
        "cluster: ServiceAccount acc-05/test-service-account exists",
        account.is_some(),
        || "not found".into(),
    );
    let secret = cluster_core(s, "acc-05", "secrets", "test-secret");
    let token = secret
        .as_ref()
        .map(|t| str_at(t, "/data/token").to_string())
        .unwrap_or_default();
    s.with(
        "cluster: Secret acc-05/test-secret, type service-account-token, data.token filled",
        secret.as_ref(),
        |t| {
            (t["type"] == "kubernetes.io/service-account-token" && !token.is_empty())
                .then_some(())
                .ok_or_else(|| format!("type {}, data {}", t["type"], t["data"]))
        },
    );
    let export = s.deploy_item_export(&inst, "default-deploy-item");
    s.eq(
        "export-token: DeployItem default-deploy-item export == {test-token: <.data.token of the Secret>}",
        export.as_ref().unwrap_or(&Value::Null),
        &json!({ "test-token": token }),
    );
    b64_decode(&token).filter(|t| !t.is_empty())
}

/// Scenario 05 adds `exportDataMappings: {tokenInfo: {token: (( token )), ...}}`. In spiff (as
/// Landscaper pins it) a field finds itself before any binding, so Landscaper fails the
/// installation with `'token' unresolved` (see `acceptance.rs`). This test runs the file as it
/// is and checks Landscaper's outcome; the next one runs it with `exports.token`.
#[test]
fn scenario_05_self_reference_fails_as_in_landscaper_manifest() {
    let Some(mut s) = Scenario::start("05", "manifest") else {
        return;
    };
    s.apply_step(1);
    s.settle(
        &[
            want("export-token", "Failed", Job::New),
            want("target-exporter-1", "Succeeded", Job::New),
            want("target-exporter-2", "Succeeded", Job::New),
            want("target-importer", "Succeeded", Job::New),
        ],
        STEP,
    );
    let inst = s.must("export-token");
    let error = short(&inst["status"]["lastError"]);
    s.ok(
        "export-token: Failed, lastError names spec.exportDataMappings.tokenInfo and 'token' unresolved",
        phase_of(&inst) == "Failed"
            && error.contains("exportDataMappings.tokenInfo")
            && error.contains("'token' unresolved"),
        || format!("phase {}, lastError {error}", phase_of(&inst)),
    );
    // The deploy item itself succeeded; only the export mapping failed.
    check_05_part_a_item(&mut s);
    // Exports are published all together or not at all.
    s.check_absent(Res::DataObject, "my-token");
    s.check_absent(Res::DataObject, "my-token-info");
    check_05_part_b(&mut s);
    s.finish();
}

#[test]
fn scenario_05_exports_export_data_mappings_target_exports_manifest() {
    let Some(mut s) = Scenario::start("05", "manifest") else {
        return;
    };
    // See scenario_05_self_reference_fails_as_in_landscaper_manifest for why this line changes.
    s.apply_step_rewritten(1, |file, content| {
        if file != "10-installation-export-token.yaml" {
            return content;
        }
        let text = String::from_utf8(content).expect("UTF-8");
        let adapted = text.replace("token: (( token ))", "token: (( exports.token ))");
        assert_ne!(
            adapted, text,
            "scenario 05 changed: `token: (( token ))` not found"
        );
        adapted.into_bytes()
    });
    s.settle(
        &[
            want("export-token", "Succeeded", Job::New),
            want("target-exporter-1", "Succeeded", Job::New),
            want("target-exporter-2", "Succeeded", Job::New),
            want("target-importer", "Succeeded", Job::New),
        ],
        STEP,
    );
    // Part A
    let inst = s.must("export-token");
    s.check_installation(&inst, "Succeeded");
    let token = check_05_part_a_item(&mut s);
    s.ok(
        "Secret acc-05/test-secret: .data.token decodes to a token",
        token.is_some(),
        || "empty or not base64".into(),
    );
    let token = token.unwrap_or_default();
    s.check_data_object("my-token", &json!(token));
    s.check_data_object(
        "my-token-info",
        &json!({"token": token, "prefixed": format!("mapping-{token}")}),
    );
    check_05_part_b(&mut s);
    // The oracle holds the mock variant's fixed token; here the cluster's token controller
    // made it, so the oracle's exports are compared with the values derived from it.
    s.oracle_overrides.insert("my-token".into(), json!(token));
    s.oracle_overrides.insert(
        "my-token-info".into(),
        json!({"token": token, "prefixed": format!("mapping-{token}")}),
    );
    s.check_oracle(1);
    s.finish();
}

/// The store revision at which installation `name` last entered `Succeeded`, from the store's
/// history (for when the watch missed the event).
fn latest_finish_from_history(s: &Scenario, name: &str) -> Option<u64> {
    let history = s.daemon.get_json(&format!(
        "/appliance/v1/history?kind=Installation&namespace=cu-example&name={name}&limit=10000"
    ))?;
    let mut entries: Vec<&Value> = history["items"].as_array()?.iter().collect();
    entries.sort_by_key(|e| e["revision"].as_u64().unwrap_or(0));
    entries
        .iter()
        .filter(|e| e["phase"] == "Succeeded" && e["previousPhase"] != "Succeeded")
        .filter_map(|e| e["revision"].as_u64())
        .next_back()
}

#[test]
fn scenario_07_subinstallation_executions_manifest() {
    let Some(mut s) = Scenario::start("07", "manifest") else {
        return;
    };
    s.apply_step(1);
    s.settle(&[want("subinst-templates", "Succeeded", Job::New)], STEP);
    let parent = s.must("subinst-templates");
    s.check_installation(&parent, "Succeeded");
    s.check_installation_refs(&parent, 3);
    s.check_absent(Res::Execution, "subinst-templates");
    let mut uids = Vec::new();
    let mut sub2 = None;
    for i in 0..3 {
        let template = format!("subinst-{i}");
        let sub = s.subinstallation("subinst-templates", &template);
        s.check_phase(
            &format!("subinstallation {template}"),
            sub.as_ref(),
            "Succeeded",
        );
        let Some(sub) = sub else { continue };
        let items = s.check_items(&sub, &["default-deploy-item"], "Succeeded");
        let cm = format!("cm-{i}");
        check_manifest_item(
            &mut s,
            &format!("{template}/default-deploy-item"),
            items.first(),
            None,
            "Succeeded",
            &[("ConfigMap", "acc-07", &cm)],
        );
        check_config_map(&mut s, "acc-07", &cm, &json!({"foo": "bar"}));
        uids.push(uid_of(&sub).to_string());
        if i == 2 {
            sub2 = Some((
                name_of(&sub).to_string(),
                items.first().map(|d| name_of(d).to_string()),
            ));
        }
    }
    let cm_uids: Vec<Option<String>> = (0..2)
        .map(|i| {
            cluster_core(&s, "acc-07", "configmaps", &format!("cm-{i}"))
                .map(|cm| uid_of(&cm).to_string())
        })
        .collect();
    s.check_oracle(1);

    s.apply_step(2);
    s.settle(&[want("subinst-templates", "Succeeded", Job::New)], STEP);
    let parent = s.must("subinst-templates");
    s.check_installation(&parent, "Succeeded");
    s.check_installation_refs(&parent, 2);
    for (i, cm_uid) in cm_uids.iter().enumerate() {
        let template = format!("subinst-{i}");
        let sub = s.subinstallation("subinst-templates", &template);
        s.with(
            &format!("subinstallation {template}: Succeeded, same object as in step 1"),
            sub.as_ref(),
            |sub| {
                (phase_of(sub) == "Succeeded" && uids.get(i).is_some_and(|u| u == uid_of(sub)))
                    .then_some(())
                    .ok_or_else(|| describe_installation(sub))
            },
        );
        let cm = format!("cm-{i}");
        check_config_map(&mut s, "acc-07", &cm, &json!({"foo": "bar"}));
        let uid = cluster_core(&s, "acc-07", "configmaps", &cm).map(|c| uid_of(&c).to_string());
        s.ok(
            &format!("cluster: ConfigMap acc-07/{cm} unchanged (same UID)"),
            uid.is_some() && uid == *cm_uid,
            || format!("step 1 {cm_uid:?}, now {uid:?}"),
        );
    }
    let (sub2_name, sub2_item) = sub2.unwrap_or_default();
    let sub2_gone = s
        .subinstallation("subinst-templates", "subinst-2")
        .is_none()
        && s.get(Res::Execution, &sub2_name).is_none()
        && sub2_item
            .as_ref()
            .is_none_or(|d| s.get(Res::DeployItem, d).is_none());
    s.ok_with(
        "subinst-2 deleted with its Execution and DeployItem",
        sub2_gone,
        |s| s.dump(),
    );
    check_cluster_absent(&mut s, "acc-07", "configmaps", "cm-2");
    let parent_done = s
        .recorder
        .job_finished(
            Res::Installation,
            "subinst-templates",
            str_at(&parent, "/status/jobID"),
        )
        .or_else(|| latest_finish_from_history(&s, "subinst-templates"));
    let deleted = s.recorder.deleted(Res::Installation, &sub2_name);
    s.check_before(
        "subinst-templates reached Succeeded only after subinst-2 was gone",
        ("subinst-2 deleted", deleted),
        ("subinst-templates finished", parent_done),
    );
    s.check_oracle(2);
    s.finish();
}

/// `config[key]` of scenarios 09 and 10 (DataObject `config`).
fn color_config(key: &str) -> Value {
    let (cpu, memory) = match key {
        "blue" => ("100m", "100Mi"),
        "green" => ("120m", "120Mi"),
        "yellow" => ("140m", "140Mi"),
        "orange" => ("160m", "160Mi"),
        _ => ("180m", "180Mi"),
    };
    json!({"color": key, "cpu": cpu, "memory": memory})
}

#[test]
fn scenario_10_target_map_subinstallations_manifest() {
    let Some(mut s) = Scenario::start("10", "manifest") else {
        return;
    };
    s.apply_step(1);
    s.settle(
        &[
            want("targetmap-ref", "Succeeded", Job::New),
            want("multiple-subinst", "Succeeded", Job::New),
            want("forward-map", "Succeeded", Job::New),
        ],
        STEP,
    );
    // Part A
    let a = s.must("targetmap-ref");
    s.check_installation(&a, "Succeeded");
    s.check_absent(Res::Execution, "targetmap-ref");
    let subs = s.subinstallations("targetmap-ref");
    s.ok(
        "targetmap-ref: one subinstallation targetmapref-sub",
        subs.len() == 1
            && annotation(&subs[0], SUBINST_NAME_ANNOTATION) == Some("targetmapref-sub"),
        || format!("{} subinstallations", subs.len()),
    );
    let sub = s.subinstallation("targetmap-ref", "targetmapref-sub");
    s.check_phase(
        "subinstallation targetmapref-sub",
        sub.as_ref(),
        "Succeeded",
    );
    if let Some(sub) = &sub {
        let items = s.check_items(sub, &["di-blue", "di-green", "di-red"], "Succeeded");
        for di in &items {
            let key = item_name(di).trim_start_matches("di-").to_string();
            let target = s.get(Res::Target, str_at(di, "/spec/target/name"));
            let root = s.get(Res::Target, &format!("cluster-{key}"));
            s.with(
                &format!("DeployItem di-{key} of targetmapref-sub: spec.target is the context copy of cluster-{key} (context Inst.targetmap-ref)"),
                target.as_ref(),
                |t| {
                    if label(t, CONTEXT_LABEL)
                        != Some("Inst.targetmap-ref")
                    {
                        return Err(format!("labels {}", t["metadata"]["labels"]));
                    }
                    same_target(t, root.as_ref())
                },
            );
            let cm = format!("targetmapref-{key}");
            check_manifest_item(
                &mut s,
                &format!("targetmapref-sub/di-{key}"),
                Some(di),
                None,
                "Succeeded",
                &[("ConfigMap", "acc-10", &cm)],
            );
            check_config_map(&mut s, "acc-10", &cm, &color_config(&key));
        }
    }
    // Part B
    let b = s.must("multiple-subinst");
    s.check_installation(&b, "Succeeded");
    let subs = s.subinstallations("multiple-subinst");
    s.eq(
        "multiple-subinst: 3 subinstallations",
        &json!(subs.len()),
        &json!(3),
    );
    for key in ["blue", "green", "red"] {
        let template = format!("multiple-subinst-sub-{key}");
        let sub = s.subinstallation("multiple-subinst", &template);
        s.check_phase(
            &format!("subinstallation {template}"),
            sub.as_ref(),
            "Succeeded",
        );
        if let Some(sub) = &sub {
            let items = s.check_items(sub, &[&format!("di-{key}")], "Succeeded");
            let cm = format!("multiple-subinst-{key}");
            check_manifest_item(
                &mut s,
                &format!("{template}/di-{key}"),
                items.first(),
                None,
                "Succeeded",
                &[("ConfigMap", "acc-10", &cm)],
            );
            check_config_map(&mut s, "acc-10", &cm, &color_config(key));
        }
    }
    // Part C
    let c = s.must("forward-map");
    s.check_installation(&c, "Succeeded");
    let sub = s.subinstallation("forward-map", "compose-map-exec-sub");
    s.check_phase(
        "subinstallation compose-map-exec-sub",
        sub.as_ref(),
        "Succeeded",
    );
    let subsub = sub
        .as_ref()
        .and_then(|sub| s.subinstallation(name_of(sub), "compose-map-exec-sub-sub"));
    s.check_phase(
        "subinstallation compose-map-exec-sub-sub (under compose-map-exec-sub)",
        subsub.as_ref(),
        "Succeeded",
    );
    if let Some(subsub) = &subsub {
        let items = s.check_items(subsub, &["di-blue", "di-green", "di-red"], "Succeeded");
        for key in ["blue", "green", "red"] {
            let di = items.iter().find(|d| item_name(d) == format!("di-{key}"));
            let cm = format!("compose-map-exec-{key}");
            check_manifest_item(
                &mut s,
                &format!("compose-map-exec-sub-sub/di-{key}"),
                di,
                None,
                "Succeeded",
                &[("ConfigMap", "acc-10", &cm)],
            );
            check_config_map(&mut s, "acc-10", &cm, &json!({"foo": "bar"}));
        }
    }
    s.check_oracle(1);
    s.finish();
}

fn has_code(obj: &Value, code: &str) -> bool {
    obj.pointer("/status/lastError/codes")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|c| c == code))
}

#[test]
fn scenario_11_immediate_errors_manifest() {
    // `mock-failed` is mock only.
    let Some(mut s) = Scenario::start("11", "manifest") else {
        return;
    };
    s.apply_step(1);
    s.settle(
        &[
            want("hello-world", "Failed", Job::New),
            want("bad-target", "Failed", Job::New),
            want("missing-import", "Failed", Job::New),
            want("wrong-type", "Failed", Job::New),
        ],
        STEP,
    );
    let hello = s.must("hello-world");
    s.check_installation(&hello, "Failed");
    let message = last_error(&hello).to_string();
    s.ok(
        "hello-world: lastError says the inline blueprint cannot be decoded (YAML line 5/6)",
        message.to_lowercase().contains("blueprint")
            && (message.contains("line 5") || message.contains("line 6")),
        || short(&hello["status"]["lastError"]),
    );
    let nothing =
        s.get(Res::Execution, "hello-world").is_none() && s.deploy_items_of(&hello).is_empty();
    s.ok_with(
        "hello-world: no Execution and no DeployItem",
        nothing,
        |s| s.dump(),
    );

    let bad = s.must("bad-target");
    s.check_installation(&bad, "Failed");
    let di = s.deploy_item(&bad, "default-deploy-item");
    s.with(
        "bad-target: DeployItem Failed, codes ∋ ERR_CONFIGURATION_PROBLEM, message mentions token files",
        di.as_ref(),
        |d| {
            (phase_of(d) == "Failed"
                && has_code(d, "ERR_CONFIGURATION_PROBLEM")
                && last_error(d).contains("token files are not supported in a target kubeconfig"))
            .then_some(())
            .ok_or_else(|| describe_installation(d))
        },
    );
    let bad_di_status = di.map(|d| d["status"].clone());
    s.check_absent(Res::Installation, "mock-failed");

    for (name, words) in [
        ("missing-import", vec!["configmapNameIn"]),
        ("wrong-type", vec!["configmapNameIn"]),
    ] {
        let inst = s.must(name);
        s.check_installation(&inst, "Failed");
        let message = last_error(&inst).to_string();
        s.ok(
            &format!("{name}: lastError names the import configmapNameIn"),
            words.iter().all(|w| message.contains(w)),
            || short(&inst["status"]["lastError"]),
        );
        let none = s.deploy_items_of(&inst).is_empty();
        s.ok_with(&format!("{name}: no DeployItem"), none, |s| s.dump());
    }
    let wrong = s.must("wrong-type");
    let message = last_error(&wrong).to_lowercase();
    s.ok(
        "wrong-type: lastError is a schema validation error (string expected, boolean given)",
        message.contains("string") && (message.contains("bool") || message.contains("true")),
        || short(&wrong["status"]["lastError"]),
    );
    for cm in [
        "hello-world",
        "bad-target",
        "cm-missing-import",
        "cm-wrong-type",
    ] {
        check_cluster_absent(&mut s, "acc-11", "configmaps", cm);
    }
    s.check_oracle(1);
    let bad_job = str_at(&s.must("bad-target"), "/status/jobID").to_string();

    s.apply_step(2);
    s.settle(
        &[
            want("hello-world", "Succeeded", Job::New),
            want("missing-import", "Succeeded", Job::New),
            want("wrong-type", "Succeeded", Job::New),
            want("bad-target", "Failed", Job::Same),
        ],
        STEP,
    );
    for name in ["hello-world", "missing-import", "wrong-type"] {
        let inst = s.must(name);
        s.check_installation(&inst, "Succeeded");
    }
    let hello = s.must("hello-world");
    let di = s.deploy_item(&hello, "default-deploy-item");
    check_manifest_item(
        &mut s,
        "hello-world/default-deploy-item",
        di.as_ref(),
        Some("my-cluster"),
        "Succeeded",
        &[("ConfigMap", "acc-11", "hello-world")],
    );
    check_config_map(
        &mut s,
        "acc-11",
        "hello-world",
        &json!({"testData": "hello"}),
    );
    for (name, cm) in [
        ("missing-import", "cm-missing-import"),
        ("wrong-type", "cm-wrong-type"),
    ] {
        let inst = s.must(name);
        let items = s.deploy_items_of(&inst);
        s.eq(
            &format!("{name}: one DeployItem"),
            &json!(items.len()),
            &json!(1),
        );
        check_manifest_item(
            &mut s,
            &format!("{name}/default"),
            items.first(),
            Some("my-cluster"),
            "Succeeded",
            &[("ConfigMap", "acc-11", cm)],
        );
        check_config_map(&mut s, "acc-11", cm, &json!({"foo": "bar"}));
    }
    let inst = s.must("bad-target");
    let di = s.deploy_item(&inst, "default-deploy-item");
    s.ok(
        "bad-target: still Failed, not re-processed (same jobID, DeployItem status unchanged)",
        phase_of(&inst) == "Failed"
            && str_at(&inst, "/status/jobID") == bad_job
            && di.as_ref().map(|d| &d["status"]) == bad_di_status.as_ref(),
        || {
            format!(
                "{}; DeployItem status now {}, after step 1 {}",
                describe_installation(&inst),
                di.as_ref()
                    .map(|d| d["status"].to_string())
                    .unwrap_or_default(),
                bad_di_status
                    .as_ref()
                    .map(Value::to_string)
                    .unwrap_or_default()
            )
        },
    );
    check_cluster_absent(&mut s, "acc-11", "configmaps", "bad-target");
    s.check_oracle(2);
    s.finish();
}

#[test]
fn scenario_12_timeouts_pickup_interrupt_manifest() {
    let Some(mut s) = Scenario::start("12", "manifest") else {
        return;
    };
    s.apply_step(1);
    // The progressing timeout is the deploy item's `timeout: 30s` (the custom readiness check on
    // `.data.ready == "true"` never holds); the pickup timeout is 5 s (daemon config).
    s.settle(
        &[
            want("hello-world", "Failed", Job::New),
            want("dummy-installation", "Failed", Job::New),
            want("interrupt-me", "Progressing", Job::New),
        ],
        Duration::from_secs(120),
    );
    let hello = s.must("hello-world");
    s.check_installation(&hello, "Failed");
    let waited = s.recorder.first(Res::Installation, "hello-world", |e| {
        phase_of(&e.object) == "Progressing" && last_error(&e.object).contains("not finished")
    });
    s.ok_with(
        "hello-world: first Progressing with lastError \"… is not finished yet\"",
        waited.is_some(),
        |s| {
            let seen: Vec<String> = s
                .recorder
                .events(Res::Installation, "hello-world")
                .iter()
                .map(|e| format!("{}: {:?}", phase_of(&e.object), last_error(&e.object)))
                .collect();
            format!("states seen: {seen:?}")
        },
    );
    let di = s.deploy_item(&hello, "default-deploy-item");
    s.with(
        "hello-world: DeployItem Failed, reason ProgressingTimeout, codes ∋ ERR_TIMEOUT",
        di.as_ref(),
        |d| {
            (phase_of(d) == "Failed"
                && str_at(d, "/status/lastError/reason") == "ProgressingTimeout"
                && has_code(d, "ERR_TIMEOUT"))
            .then_some(())
            .ok_or_else(|| describe_installation(d))
        },
    );
    // The manifest was applied; only its readiness is missing.
    check_config_map(
        &mut s,
        "acc-12",
        "hello-world",
        &json!({"testData": "hello", "ready": "false"}),
    );
    let dummy = s.must("dummy-installation");
    s.check_installation(&dummy, "Failed");
    let di = s.deploy_item(&dummy, "main");
    s.with(
        "dummy-installation: DeployItem main Failed, reason PickupTimeout, codes ∋ ERR_TIMEOUT, message \"no deployer has reconciled this deployitem within N seconds\"",
        di.as_ref(),
        |d| {
            (phase_of(d) == "Failed"
                && str_at(d, "/status/lastError/reason") == "PickupTimeout"
                && has_code(d, "ERR_TIMEOUT")
                && last_error(d).contains("no deployer has reconciled this deployitem within"))
            .then_some(())
            .ok_or_else(|| describe_installation(d))
        },
    );
    let interrupt = s.must("interrupt-me");
    s.eq(
        "interrupt-me: still Progressing",
        &json!(phase_of(&interrupt)),
        &json!("Progressing"),
    );
    let di = s.deploy_item(&interrupt, "default-deploy-item");
    check_manifest_item(
        &mut s,
        "interrupt-me/default-deploy-item",
        di.as_ref(),
        Some("my-cluster"),
        "Progressing",
        &[("ConfigMap", "acc-12", "interrupt-me")],
    );
    check_config_map(&mut s, "acc-12", "interrupt-me", &json!({"ready": "false"}));
    s.check_oracle(1);
    let dummy_job = str_at(&dummy, "/status/jobID").to_string();

    s.apply_step(2);
    s.settle(
        &[
            want("hello-world", "Succeeded", Job::New),
            want("interrupt-me", "Failed", Job::Any),
            want("dummy-installation", "Failed", Job::Same),
        ],
        STEP,
    );
    let hello = s.must("hello-world");
    s.check_installation(&hello, "Succeeded");
    let di = s.deploy_item(&hello, "default-deploy-item");
    check_manifest_item(
        &mut s,
        "hello-world/default-deploy-item",
        di.as_ref(),
        Some("my-cluster"),
        "Succeeded",
        &[("ConfigMap", "acc-12", "hello-world")],
    );
    check_config_map(
        &mut s,
        "acc-12",
        "hello-world",
        &json!({"testData": "hello", "ready": "true"}),
    );
    let interrupt = s.must("interrupt-me");
    s.check_installation(&interrupt, "Failed");
    let di = s.deploy_item(&interrupt, "default-deploy-item");
    s.with(
        "interrupt-me: DeployItem Failed, lastError reason and operation InterruptOperation, message \"operation was interrupted\", jobIDFinished == jobID",
        di.as_ref(),
        |d| {
            (phase_of(d) == "Failed"
                && str_at(d, "/status/lastError/reason") == "InterruptOperation"
                && str_at(d, "/status/lastError/operation") == "InterruptOperation"
                && last_error(d).contains("operation was interrupted")
                && d.pointer("/status/jobID") == d.pointer("/status/jobIDFinished"))
            .then_some(())
            .ok_or_else(|| describe_installation(d))
        },
    );
    let exec = s.execution_of(&interrupt);
    s.check_phase("interrupt-me: Execution", exec.as_ref(), "Failed");
    let dummy = s.must("dummy-installation");
    s.ok(
        "dummy-installation: unchanged, Failed",
        phase_of(&dummy) == "Failed" && str_at(&dummy, "/status/jobID") == dummy_job,
        || describe_installation(&dummy),
    );
    s.check_oracle(2);
    s.finish();
}

/// Scenario 14 with every row of EXPECTED.md (the test server merges a Secret's `stringData`
/// into `data` as a real API server does).
#[test]
fn scenario_14_upgrade_manifest() {
    let Some(mut s) = Scenario::start("14", "manifest") else {
        return;
    };
    s.apply_step(1);
    s.settle(
        &[
            want("hello-world", "Succeeded", Job::New),
            want("inline", "Succeeded", Job::New),
            want("auto", "Succeeded", Job::New),
        ],
        STEP,
    );
    let hello = s.must("hello-world");
    s.check_installation(&hello, "Succeeded");
    let di = s.deploy_item(&hello, "default-deploy-item");
    check_manifest_item(
        &mut s,
        "hello-world/default-deploy-item",
        di.as_ref(),
        Some("my-cluster"),
        "Succeeded",
        &[("ConfigMap", "acc-14", "hello-world")],
    );
    check_config_map(
        &mut s,
        "acc-14",
        "hello-world",
        &json!({"testData": "hello"}),
    );
    let hello_di_uid = di.map(|d| uid_of(&d).to_string()).unwrap_or_default();
    let inline = s.must("inline");
    s.check_installation(&inline, "Succeeded");
    let items = s.check_items(&inline, &["item-1"], "Succeeded");
    check_manifest_item(
        &mut s,
        "inline/item-1",
        items.first(),
        Some("my-cluster"),
        "Succeeded",
        &[("ConfigMap", "acc-14", "cm-1")],
    );
    check_config_map(&mut s, "acc-14", "cm-1", &json!({"foo": "bar"}));
    let item1_uid = items
        .first()
        .map(|d| uid_of(d).to_string())
        .unwrap_or_default();
    let auto = s.must("auto");
    s.check_installation(&auto, "Succeeded");
    let di = s.deploy_item(&auto, "default-deploy-item");
    check_manifest_item(
        &mut s,
        "auto/default-deploy-item",
        di.as_ref(),
        Some("my-cluster"),
        "Succeeded",
        &[("ConfigMap", "acc-14", "auto")],
    );
    check_config_map(&mut s, "acc-14", "auto", &json!({"revision": "1"}));
    s.check_oracle(1);

    // Step 2
    s.apply_step(2);
    s.settle(
        &[
            want("hello-world", "Succeeded", Job::New),
            want("inline", "Succeeded", Job::New),
            want("auto", "Succeeded", Job::New),
        ],
        STEP,
    );
    let hello = s.must("hello-world");
    s.check_installation(&hello, "Succeeded");
    s.eq(
        "hello-world: observedGeneration 2",
        &hello["status"]["observedGeneration"],
        &json!(2),
    );
    let di = s.deploy_item(&hello, "default-deploy-item");
    check_manifest_item(
        &mut s,
        "hello-world/default-deploy-item",
        di.as_ref(),
        Some("my-cluster"),
        "Succeeded",
        &[("Secret", "acc-14", "hello-world")],
    );
    s.ok(
        "hello-world: same DeployItem object as in step 1",
        di.as_ref().is_some_and(|d| uid_of(d) == hello_di_uid),
        || format!("step 1 {hello_di_uid}"),
    );
    // The ConfigMap of chart 1.0.0 is no longer listed: the deployer removed it.
    check_cluster_absent(&mut s, "acc-14", "configmaps", "hello-world");
    let secret = cluster_core(&s, "acc-14", "secrets", "hello-world");
    s.with(
        "cluster: Secret acc-14/hello-world with data.testData == base64(hello), no stringData",
        secret.as_ref(),
        |t| {
            let data = str_at(t, "/data/testData");
            let ok = b64_decode(data).as_deref() == Some("hello") && t.get("stringData").is_none();
            ok.then_some(())
                .ok_or_else(|| format!("data {}, stringData {}", t["data"], t["stringData"]))
        },
    );
    let inline = s.must("inline");
    s.check_installation(&inline, "Succeeded");
    let items = s.check_items(&inline, &["item-1", "item-2", "item-3"], "Succeeded");
    for item in &items {
        let n = item_name(item).to_string();
        let cm = format!("cm-{}", n.trim_start_matches("item-"));
        check_manifest_item(
            &mut s,
            &format!("inline/{n}"),
            Some(item),
            Some("my-cluster"),
            "Succeeded",
            &[("ConfigMap", "acc-14", &cm)],
        );
        check_config_map(&mut s, "acc-14", &cm, &json!({"foo": "bar"}));
    }
    s.check_item_order(&inline, "item-2", &["item-1"]);
    s.check_item_order(&inline, "item-3", &["item-1", "item-2"]);
    s.ok(
        "inline: item-1 is the same object as in step 1",
        items
            .iter()
            .any(|d| item_name(d) == "item-1" && uid_of(d) == item1_uid),
        || format!("step 1 uid {item1_uid}"),
    );
    let orphans: Vec<String> = items
        .iter()
        .filter(|d| item_name(d) != "item-1")
        .map(|d| name_of(d).to_string())
        .collect();
    let auto = s.must("auto");
    s.check_installation(&auto, "Succeeded");
    s.eq(
        "auto: observedGeneration 2",
        &auto["status"]["observedGeneration"],
        &json!(2),
    );
    check_config_map(&mut s, "acc-14", "auto", &json!({"revision": "2"}));
    let di = s.deploy_item(&auto, "default-deploy-item");
    let auto_di_status = di.map(|d| {
        (
            str_at(&d, "/status/jobID").to_string(),
            str_at(&d, "/status/lastReconcileTime").to_string(),
        )
    });
    s.check_oracle(2);
    let hello_job = str_at(&hello, "/status/jobID").to_string();

    // Step 3
    s.apply_step(3);
    let step3 = s.step_revision;
    s.settle(
        &[
            want("inline", "Succeeded", Job::New),
            want("auto", "Succeeded", Job::Same),
            want("hello-world", "Succeeded", Job::Same),
        ],
        STEP,
    );
    let inline = s.must("inline");
    s.check_installation(&inline, "Succeeded");
    let items = s.check_items(&inline, &["item-1"], "Succeeded");
    s.ok(
        "inline: DeployItems item-2, item-3 deleted",
        orphans.iter().all(|o| s.get(Res::DeployItem, o).is_none()),
        || format!("{orphans:?}"),
    );
    let exec_job = s
        .execution_of(&inline)
        .map(|e| str_at(&e, "/status/jobID").to_string())
        .unwrap_or_default();
    let item1 = items
        .first()
        .map(|d| name_of(d).to_string())
        .unwrap_or_default();
    let retriggered = s.recorder.triggered(Res::DeployItem, &item1, &exec_job);
    let last_orphan = orphans
        .iter()
        .map(|o| s.recorder.deleted(Res::DeployItem, o))
        .collect::<Option<Vec<u64>>>()
        .and_then(|v| v.into_iter().max());
    s.check_before(
        "inline: orphans item-2, item-3 deleted before item-1 is re-triggered",
        ("last orphan deleted", last_orphan),
        ("item-1 triggered", retriggered),
    );
    check_manifest_item(
        &mut s,
        "inline/item-1",
        items.first(),
        Some("my-cluster"),
        "Succeeded",
        &[("ConfigMap", "acc-14", "cm-1")],
    );
    // Exact: `foo` removed (`updateStrategy: update`).
    check_config_map(&mut s, "acc-14", "cm-1", &json!({"key1": "value1"}));
    for cm in ["cm-2", "cm-3"] {
        check_cluster_absent(&mut s, "acc-14", "configmaps", cm);
    }
    s.check_data_object("do-entry-out", &json!({"key": "key2", "value": "value2"}));
    let auto = s.must("auto");
    let di = s.deploy_item(&auto, "default-deploy-item");
    let now = di.map(|d| {
        (
            str_at(&d, "/status/jobID").to_string(),
            str_at(&d, "/status/lastReconcileTime").to_string(),
        )
    });
    let annotated = s.recorder.first(Res::Installation, "auto", |e| {
        e.revision > step3 && annotation(&e.object, "landscaper.gardener.cloud/operation").is_some()
    });
    s.ok(
        "auto: not reconciled (observedGeneration 2, DeployItem jobID/lastReconcileTime unchanged, no reconcile annotation added)",
        auto["status"]["observedGeneration"] == 2 && now == auto_di_status && annotated.is_none(),
        || {
            format!(
                "{}; DeployItem (jobID, lastReconcileTime) {now:?}, after step 2 {auto_di_status:?}; annotation added at revision {annotated:?}",
                describe_installation(&auto)
            )
        },
    );
    check_config_map(&mut s, "acc-14", "auto", &json!({"revision": "2"}));
    let hello = s.must("hello-world");
    s.eq(
        "hello-world: unchanged, no new jobID",
        &json!(str_at(&hello, "/status/jobID")),
        &json!(hello_job),
    );
    s.check_oracle(3);

    // Step 4
    s.apply_step(4);
    s.settle(
        &[
            want("inline", "Succeeded", Job::New),
            want("auto", "Succeeded", Job::Same),
            want("hello-world", "Succeeded", Job::Same),
        ],
        STEP,
    );
    let inline = s.must("inline");
    s.check_installation(&inline, "Succeeded");
    let items = s.check_items(&inline, &["item-1"], "Succeeded");
    check_manifest_item(
        &mut s,
        "inline/item-1",
        items.first(),
        Some("my-cluster"),
        "Succeeded",
        &[("ConfigMap", "acc-14", "cm-1")],
    );
    check_config_map(&mut s, "acc-14", "cm-1", &json!({"foo": "bar"}));
    s.check_absent(Res::DataObject, "do-entry-out");
    let entry_in = s.get(Res::DataObject, "do-entry-in");
    s.ok(
        "DataObject do-entry-in still exists",
        entry_in.is_some(),
        || "gone".into(),
    );
    let hello = s.must("hello-world");
    s.eq(
        "hello-world: unchanged, no new jobID",
        &json!(str_at(&hello, "/status/jobID")),
        &json!(hello_job),
    );
    s.check_oracle(4);
    s.finish();
}
