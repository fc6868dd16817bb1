//! The acceptance scenarios of `../shared/acceptance` (mock variants, and the `any` variant of
//! 08) run through the real binary and a watched folder. Each test checks the rows of its
//! scenario's EXPECTED.md that apply to the mock variant, and compares the state with the
//! oracle files `expected/mock.step-N.yaml`. See `tests/src/acceptance.rs` for the runner.

use std::time::Duration;

use landscaper_e2e::acceptance::{
    CONTEXT_LABEL, DEPENDS_ON_ANNOTATION, Job, Res, SUBINST_NAME_ANNOTATION, Scenario, annotation,
    describe_installation, first_manifest, gone, item_name, label, last_error, name_of, owned_by,
    patch, phase_of, same_target, short, str_at, uid_of, want,
};
use serde_json::{Value, json};

/// How long a step of a mock scenario may take to settle (they take about a second).
const STEP: Duration = Duration::from_secs(30);

fn has_code(obj: &Value, code: &str) -> bool {
    obj.pointer("/status/lastError/codes")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|c| c == code))
}

fn last_error_of(obj: &Value) -> String {
    short(&obj["status"]["lastError"])
}

#[test]
fn scenario_01_single_deployitem() {
    let Some(mut s) = Scenario::start("01", "mock") else {
        return;
    };
    s.apply_step(1);
    s.settle(&[want("hello-world", "Succeeded", Job::New)], STEP);
    let inst = s.must("hello-world");
    s.check_installation(&inst, "Succeeded");
    s.eq(
        "Installation hello-world: status.executionRef.name == hello-world",
        &inst["status"]["executionRef"]["name"],
        &json!("hello-world"),
    );
    s.check_installation_refs(&inst, 0);
    let exec = s.execution_of(&inst);
    s.check_phase("Execution hello-world", exec.as_ref(), "Succeeded");
    s.check_execution_refs(&inst, &["default-deploy-item"]);
    let di = s.deploy_item(&inst, "default-deploy-item");
    s.with(
        "DeployItem default-deploy-item: spec.type mock, target my-cluster, Succeeded, deployer-type annotation == spec.type",
        di.as_ref(),
        |d| {
            let ty = str_at(d, "/spec/type");
            if ty != "landscaper.gardener.cloud/mock" {
                return Err(format!("spec.type {ty}"));
            }
            if str_at(d, "/spec/target/name") != "my-cluster" {
                return Err(format!("spec.target {}", d["spec"]["target"]));
            }
            if phase_of(d) != "Succeeded" {
                return Err(format!("phase {}, lastError {}", phase_of(d), last_error_of(d)));
            }
            if annotation(d, "landscaper.gardener.cloud/deployer-type") != Some(ty) {
                return Err(format!("annotations {}", d["metadata"]["annotations"]));
            }
            Ok(())
        },
    );
    s.with(
        "DeployItem default-deploy-item: providerStatus = ConfigMap acc-01/hello-world {testData: hello}",
        di.as_ref(),
        |d| {
            let want = json!({
                "apiVersion": "mock.deployer.landscaper.gardener.cloud/v1alpha1",
                "kind": "ProviderStatus",
                "manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "hello-world", "namespace": "acc-01"},
                    "data": {"testData": "hello"}}]
            });
            (d["status"]["providerStatus"] == want)
                .then_some(())
                .ok_or_else(|| format!("have {}", d["status"]["providerStatus"]))
        },
    );
    s.check_oracle(1);
    s.finish();
}

#[test]
fn scenario_02_multiple_deployitems_dependson() {
    let Some(mut s) = Scenario::start("02", "mock") else {
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
    for (di, item, target, depends, release, ns, data) in [
        (
            &di1,
            "deploy-item-1",
            "my-cluster-1",
            "",
            "hello-world-1",
            "acc-02-1",
            "foo",
        ),
        (
            &di2,
            "deploy-item-2",
            "my-cluster-2",
            "deploy-item-1",
            "hello-world-2",
            "acc-02-2",
            "bar",
        ),
    ] {
        s.check_phase(&format!("DeployItem {item}"), di.as_ref(), "Succeeded");
        s.with(
            &format!(
                "DeployItem {item}: spec.target.name == {target}, annotation dependsOn {depends:?}"
            ),
            di.as_ref(),
            |d| {
                if str_at(d, "/spec/target/name") != target {
                    return Err(format!("spec.target {}", d["spec"]["target"]));
                }
                if annotation(d, DEPENDS_ON_ANNOTATION) != Some(depends) {
                    return Err(format!("annotations {}", d["metadata"]["annotations"]));
                }
                Ok(())
            },
        );
        s.with(
            &format!("DeployItem {item}: providerStatus.release {{{release}, {ns}}}, values.testData {data}"),
            di.as_ref(),
            |d| {
                let p = &d["status"]["providerStatus"];
                if p["release"] == json!({"name": release, "namespace": ns})
                    && p["values"]["testData"] == data
                {
                    Ok(())
                } else {
                    Err(format!("providerStatus {p}"))
                }
            },
        );
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
fn check_03_exports(s: &mut Scenario, data: Value) {
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
    s.check_phase("DeployItem default", di.as_ref(), "Succeeded");
    s.with(
        "DeployItem default: providerStatus.manifests[0] is ConfigMap acc-03/cm-example with the data",
        di.as_ref(),
        |d| {
            let m = first_manifest(d);
            (m["kind"] == "ConfigMap"
                && m["metadata"] == json!({"name": "cm-example", "namespace": "acc-03"})
                && m["data"] == data)
                .then_some(())
                .ok_or_else(|| format!("manifest {m}"))
        },
    );
}

#[test]
fn scenario_03_import_parameters_dataobject_configmap_secret() {
    let Some(mut s) = Scenario::start("03", "mock") else {
        return;
    };
    s.apply_step(1);
    s.settle(&[want("import-export-1", "Succeeded", Job::New)], STEP);
    let inst = s.must("import-export-1");
    s.check_installation(&inst, "Succeeded");
    check_03_exports(
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
        check_03_exports(&mut s, data);
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
fn scenario_04_import_data_mappings_spiff() {
    let Some(mut s) = Scenario::start("04", "mock") else {
        return;
    };
    s.apply_step(1);
    s.settle(
        &[
            want("import-export-1", "Succeeded", Job::New),
            want("echo-server", "Succeeded", Job::New),
        ],
        STEP,
    );
    let inst = s.must("import-export-1");
    s.check_installation(&inst, "Succeeded");
    let di = s.deploy_item(&inst, "default");
    s.with(
        "import-export-1: providerStatus.manifests[0].data == {foo: bar, key7: value7, key8: value8}",
        di.as_ref(),
        |d| {
            let m = first_manifest(d);
            (m["data"] == json!({"foo": "bar", "key7": "value7", "key8": "value8"})
                && m["metadata"] == json!({"name": "cm-example", "namespace": "acc-04"}))
            .then_some(())
            .ok_or_else(|| format!("manifest {m}"))
        },
    );
    s.check_data_object("export-do-name", &json!("cm-example-x"));
    s.check_data_object(
        "export-do-data",
        &json!({"foo": "bar", "key7": "value7", "key8": "value8"}),
    );
    let echo = s.must("echo-server");
    s.check_installation(&echo, "Succeeded");
    let di = s.deploy_item(&echo, "default-deploy-item");
    s.with(
        "echo-server: DeployItem default-deploy-item providerStatus (release echo/acc-04, createNamespace, chart echo-server:1.0.0, values)",
        di.as_ref(),
        |d| {
            let p = &d["status"]["providerStatus"];
            let ok = p["name"] == "echo"
                && p["namespace"] == "acc-04"
                && p["createNamespace"] == true
                && p["chart"]["ref"]
                    .as_str()
                    .is_some_and(|r| r.ends_with("/echo-server:1.0.0"))
                && p["values"] == json!({"image": "hashicorp/http-echo:0.2.3", "text": "hello"});
            ok.then_some(()).ok_or_else(|| format!("providerStatus {p}"))
        },
    );
    s.check_oracle(1);
    s.finish();
}

/// Scenario 05 adds `exportDataMappings: {tokenInfo: {token: (( token )), ...}}` and expects
/// `token` to be the blueprint export. In spiff (v1.7.0-beta-7, which Landscaper pins) a field
/// finds itself before any binding (lexical scoping; spiff-conformance case 021 pins exactly
/// this), so Landscaper fails the installation with `'token' unresolved`. The appliance does what
/// Landscaper does: this test runs the file as it is and checks Landscaper's outcome, and
/// [`scenario_05_exports_export_data_mappings_target_exports`] runs it with the reference written
/// as `exports.token` and checks every row of EXPECTED.md.
#[test]
fn scenario_05_self_reference_fails_as_in_landscaper() {
    let Some(mut s) = Scenario::start("05", "mock") else {
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
    let error = last_error_of(&inst);
    s.ok(
        "export-token: Failed, lastError names spec.exportDataMappings.tokenInfo and 'token' unresolved",
        phase_of(&inst) == "Failed"
            && error.contains("exportDataMappings.tokenInfo")
            && error.contains("'token' unresolved"),
        || format!("phase {}, lastError {error}", phase_of(&inst)),
    );
    // Exports are published all together or not at all.
    s.check_absent(Res::DataObject, "my-token");
    s.check_absent(Res::DataObject, "my-token-info");
    check_05_part_b(&mut s);
    s.finish();
}

#[test]
fn scenario_05_exports_export_data_mappings_target_exports() {
    let Some(mut s) = Scenario::start("05", "mock") else {
        return;
    };
    // See scenario_05_self_reference_fails_as_in_landscaper for why this one line changes.
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
    let export = s.deploy_item_export(&inst, "default-deploy-item");
    s.eq(
        "export-token: DeployItem default-deploy-item export",
        export.as_ref().unwrap_or(&Value::Null),
        &json!({"test-token": "ZHVtbXktdG9rZW4tZm9yLWFjY2VwdGFuY2UtdGVzdHM="}),
    );
    s.check_data_object("my-token", &json!("dummy-token-for-acceptance-tests"));
    s.check_data_object(
        "my-token-info",
        &json!({"token": "dummy-token-for-acceptance-tests",
                "prefixed": "mapping-dummy-token-for-acceptance-tests"}),
    );
    check_05_part_b(&mut s);
    s.check_oracle(1);
    s.finish();
}

/// Part B of scenario 05: exported Targets and the targetList import.
fn check_05_part_b(s: &mut Scenario) {
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
    s.with(
        "target-importer: providerStatus.manifests[0].data == {target-1: dummy kubeconfig 1, target-2: dummy kubeconfig 2}",
        di.as_ref(),
        |d| {
            let m = first_manifest(d);
            (m["data"] == json!({"target-1": "dummy kubeconfig 1", "target-2": "dummy kubeconfig 2"}))
                .then_some(())
                .ok_or_else(|| format!("manifest {m}"))
        },
    );
}

#[test]
fn scenario_06_subinstallations_dataflow() {
    let Some(mut s) = Scenario::start("06", "mock") else {
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
        let items = s.check_items(&sub, &["default-deploy-item"], "Succeeded");
        s.ok(
            &format!("subinstallation {template}: manifest name {cm}"),
            items.first().is_some_and(|d| {
                first_manifest(d)["metadata"]["name"] == cm
                    && first_manifest(d)["data"] == json!({"foo": "bar"})
            }),
            || format!("{:?}", items.first().map(first_manifest)),
        );
    }
    s.check_sub_order("export-import", "subinst2", &["subinst1"]);
    s.check_sub_order("export-import", "subinst3", &["subinst2"]);
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
fn scenario_07_subinstallation_executions() {
    let Some(mut s) = Scenario::start("07", "mock") else {
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
        s.ok(
            &format!("subinstallation {template}: ConfigMap cm-{i} {{foo: bar}} in providerStatus"),
            items.first().is_some_and(|d| {
                let m = first_manifest(d);
                m["metadata"]["name"] == format!("cm-{i}") && m["data"] == json!({"foo": "bar"})
            }),
            || format!("{:?}", items.first().map(first_manifest)),
        );
        uids.push(uid_of(&sub).to_string());
        if i == 2 {
            sub2 = Some((
                name_of(&sub).to_string(),
                items.first().map(|d| name_of(d).to_string()),
            ));
        }
    }
    s.check_oracle(1);

    s.apply_step(2);
    s.settle(&[want("subinst-templates", "Succeeded", Job::New)], STEP);
    let parent = s.must("subinst-templates");
    s.check_installation(&parent, "Succeeded");
    s.check_installation_refs(&parent, 2);
    for i in 0..2 {
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
    // The watch can miss an event when its stream is re-established; the store's history of
    // the object then tells when the latest job finished.
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

#[test]
fn scenario_08_subinstallation_dependencies() {
    let Some(mut s) = Scenario::start("08", "any") else {
        return;
    };
    s.apply_step(1);
    s.settle(
        &[
            want("dependencies-root", "Succeeded", Job::New),
            want("dependencies-cycle", "Failed", Job::New),
            want("dependencies-conflict", "Failed", Job::New),
        ],
        STEP,
    );
    let root = s.must("dependencies-root");
    s.check_installation(&root, "Succeeded");
    let mut uids = Vec::new();
    for i in 1..=4 {
        let template = format!("dependencies-sub{i}");
        let sub = s.subinstallation("dependencies-root", &template);
        s.check_phase(
            &format!("subinstallation {template}"),
            sub.as_ref(),
            "Succeeded",
        );
        uids.push(sub.map(|s| uid_of(&s).to_string()).unwrap_or_default());
    }
    s.check_sub_order(
        "dependencies-root",
        "dependencies-sub2",
        &["dependencies-sub1"],
    );
    s.check_sub_order(
        "dependencies-root",
        "dependencies-sub3",
        &["dependencies-sub2"],
    );
    s.check_sub_order(
        "dependencies-root",
        "dependencies-sub4",
        &["dependencies-sub3"],
    );
    s.check_data_object("export-do-track", &json!("ABCD"));
    for (key, value) in [
        ("track1", "A"),
        ("track2", "AB"),
        ("track3", "ABC"),
        ("track4", "ABCD"),
    ] {
        s.check_context_data_object("dependencies-root", key, &json!(value));
    }
    let cycle = s.must("dependencies-cycle");
    s.check_installation(&cycle, "Failed");
    let message = last_error(&cycle).to_lowercase();
    s.ok(
        "dependencies-cycle: lastError names a cycle (or failed subinstallations)",
        message.contains("cycle")
            || message.contains("sub-installation")
            || message.contains("subinstallation"),
        || last_error_of(&cycle),
    );
    s.check_absent(Res::DataObject, "export-do-track-cycle");
    let conflict = s.must("dependencies-conflict");
    s.check_installation(&conflict, "Failed");
    let message = last_error(&conflict);
    s.ok(
        "dependencies-conflict: lastError names the export track1 exported by dependencies-sub1 and dependencies-sub2",
        message.contains("track1")
            && message.contains("dependencies-sub1")
            && message.contains("dependencies-sub2"),
        || last_error_of(&conflict),
    );
    s.check_absent(Res::DataObject, "export-do-track-conflict");
    s.check_oracle(1);
    let jobs = (
        str_at(&cycle, "/status/jobID").to_string(),
        str_at(&conflict, "/status/jobID").to_string(),
    );

    s.apply_step(2);
    s.settle(
        &[
            want("dependencies-root", "Succeeded", Job::New),
            want("dependencies-cycle", "Failed", Job::Same),
            want("dependencies-conflict", "Failed", Job::Same),
        ],
        STEP,
    );
    let root = s.must("dependencies-root");
    s.check_installation(&root, "Succeeded");
    s.eq(
        "dependencies-root: generation 2 observed",
        &root["status"]["observedGeneration"],
        &json!(2),
    );
    s.check_sub_order(
        "dependencies-root",
        "dependencies-sub4",
        &[
            "dependencies-sub1",
            "dependencies-sub2",
            "dependencies-sub3",
        ],
    );
    s.check_data_object("export-do-track", &json!("(A|B|C)D"));
    for (key, value) in [
        ("track1", "A"),
        ("track2", "B"),
        ("track3", "C"),
        ("track4", "(A|B|C)D"),
    ] {
        s.check_context_data_object("dependencies-root", key, &json!(value));
    }
    for i in 1..=4 {
        let template = format!("dependencies-sub{i}");
        let sub = s.subinstallation("dependencies-root", &template);
        let before = uids[i - 1].clone();
        s.with(
            &format!("subinstallation {template}: Succeeded, updated in place (same UID)"),
            sub.as_ref(),
            |sub| {
                (phase_of(sub) == "Succeeded" && uid_of(sub) == before)
                    .then_some(())
                    .ok_or_else(|| {
                        format!(
                            "uid {} (step 1: {before}), {}",
                            uid_of(sub),
                            describe_installation(sub)
                        )
                    })
            },
        );
    }
    for (name, job) in [
        ("dependencies-cycle", &jobs.0),
        ("dependencies-conflict", &jobs.1),
    ] {
        let inst = s.must(name);
        s.ok(
            &format!("{name}: unchanged, still Failed"),
            phase_of(&inst) == "Failed" && str_at(&inst, "/status/jobID") == job,
            || describe_installation(&inst),
        );
    }
    s.check_oracle(2);
    s.finish();
}

#[test]
fn scenario_09_target_map_deployitems() {
    let Some(mut s) = Scenario::start("09", "mock") else {
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
            s.with(
                &format!("DeployItem di-{key}: target cluster-{key}, ConfigMap multiple-items-{key} {{color, cpu, memory}}"),
                di,
                |d| {
                    let m = first_manifest(d);
                    (str_at(d, "/spec/target/name") == format!("cluster-{key}")
                        && m["metadata"]["name"] == format!("multiple-items-{key}")
                        && m["data"] == json!({"color": key, "cpu": cpu, "memory": memory}))
                    .then_some(())
                    .ok_or_else(|| format!("target {}, manifest {m}", d["spec"]["target"]))
                },
            );
        }
        items
    };
    s.apply_step(1);
    s.settle(&[want("multiple-items", "Succeeded", Job::New)], STEP);
    let inst = s.must("multiple-items");
    s.check_installation(&inst, "Succeeded");
    let items = check_items(&mut s, &inst, &["blue", "green", "red"]);
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
fn scenario_10_target_map_subinstallations() {
    let Some(mut s) = Scenario::start("10", "mock") else {
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
            s.check_items(sub, &[&format!("di-{key}")], "Succeeded");
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
        s.check_items(subsub, &["di-blue", "di-green", "di-red"], "Succeeded");
    }
    s.check_oracle(1);
    s.finish();
}

#[test]
fn scenario_11_immediate_errors() {
    let Some(mut s) = Scenario::start("11", "mock") else {
        return;
    };
    s.apply_step(1);
    s.settle(
        &[
            want("hello-world", "Failed", Job::New),
            want("bad-target", "Failed", Job::New),
            want("mock-failed", "Failed", Job::New),
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
        || last_error_of(&hello),
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

    let failed = s.must("mock-failed");
    s.check_installation(&failed, "Failed");
    let di = s.deploy_item(&failed, "default-deploy-item");
    s.check_phase(
        "mock-failed: DeployItem default-deploy-item",
        di.as_ref(),
        "Failed",
    );
    let exec = s.execution_of(&failed);
    s.check_phase("mock-failed: Execution", exec.as_ref(), "Failed");
    s.with(
        "mock-failed: Execution lastError \"has failed or missing deploy items\"",
        exec.as_ref(),
        |e| {
            last_error(e)
                .contains("has failed or missing deploy items")
                .then_some(())
                .ok_or_else(|| last_error_of(e))
        },
    );
    let failed_di_status = di.map(|d| d["status"].clone());

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
            || last_error_of(&inst),
        );
        let none = s.deploy_items_of(&inst).is_empty();
        s.ok_with(&format!("{name}: no DeployItem"), none, |s| s.dump());
    }
    let wrong = s.must("wrong-type");
    let message = last_error(&wrong).to_lowercase();
    s.ok(
        "wrong-type: lastError is a schema validation error (string expected, boolean given)",
        message.contains("string") && (message.contains("bool") || message.contains("true")),
        || last_error_of(&wrong),
    );
    s.check_oracle(1);
    let jobs: Vec<(String, String)> = ["bad-target", "mock-failed"]
        .iter()
        .map(|n| {
            (
                n.to_string(),
                str_at(&s.must(n), "/status/jobID").to_string(),
            )
        })
        .collect();

    s.apply_step(2);
    s.settle(
        &[
            want("hello-world", "Succeeded", Job::New),
            want("missing-import", "Succeeded", Job::New),
            want("wrong-type", "Succeeded", Job::New),
            want("bad-target", "Failed", Job::Same),
            want("mock-failed", "Failed", Job::Same),
        ],
        STEP,
    );
    for name in ["hello-world", "missing-import", "wrong-type"] {
        let inst = s.must(name);
        s.check_installation(&inst, "Succeeded");
    }
    let hello = s.must("hello-world");
    let di = s.deploy_item(&hello, "default-deploy-item");
    s.check_phase(
        "hello-world: DeployItem default-deploy-item",
        di.as_ref(),
        "Succeeded",
    );
    for (name, cm) in [
        ("missing-import", "cm-missing-import"),
        ("wrong-type", "cm-wrong-type"),
    ] {
        let inst = s.must(name);
        let items = s.deploy_items_of(&inst);
        s.ok(
            &format!("{name}: ConfigMap acc-11/{cm} {{foo: bar}} in providerStatus"),
            items.len() == 1 && {
                let m = first_manifest(&items[0]);
                m["metadata"] == json!({"name": cm, "namespace": "acc-11"})
                    && m["data"] == json!({"foo": "bar"})
            },
            || format!("{:?}", items.iter().map(first_manifest).collect::<Vec<_>>()),
        );
    }
    for ((name, job), status) in jobs.iter().zip([bad_di_status, failed_di_status]) {
        let inst = s.must(name);
        let di = s.deploy_item(&inst, "default-deploy-item");
        s.ok(
            &format!(
                "{name}: still Failed, not re-processed (same jobID, DeployItem status unchanged)"
            ),
            phase_of(&inst) == "Failed"
                && str_at(&inst, "/status/jobID") == job
                && di.as_ref().map(|d| &d["status"]) == status.as_ref(),
            || {
                format!(
                    "{}; DeployItem status now {}, after step 1 {}",
                    describe_installation(&inst),
                    di.as_ref()
                        .map(|d| d["status"].to_string())
                        .unwrap_or_default(),
                    status.as_ref().map(Value::to_string).unwrap_or_default()
                )
            },
        );
    }
    s.check_oracle(2);
    s.finish();
}

#[test]
fn scenario_12_timeouts_pickup_interrupt() {
    let Some(mut s) = Scenario::start("12", "mock") else {
        return;
    };
    s.apply_step(1);
    // The progressing timeout is the deploy item's `timeout: 30s`; the pickup timeout is 5 s
    // (daemon config).
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
    s.check_phase(
        "interrupt-me: DeployItem default-deploy-item",
        di.as_ref(),
        "Progressing",
    );
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
    s.check_phase(
        "hello-world: DeployItem default-deploy-item",
        di.as_ref(),
        "Succeeded",
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

/// Steps 1 to 3 of scenario 13.
fn scenario_13_steps_1_to_3(s: &mut Scenario) {
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
    s.with(
        "hello-world: DeployItem spec.target.name == my-cluster-b",
        di.as_ref(),
        |d| {
            (str_at(d, "/spec/target/name") == "my-cluster-b")
                .then_some(())
                .ok_or_else(|| format!("{}", d["spec"]["target"]))
        },
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
    let keep_di = s
        .deploy_item(&keep, "default-deploy-item")
        .map(|d| name_of(&d).to_string())
        .unwrap_or_default();
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
    // Landscaper marks all items for deletion at once and then triggers (new jobID) the
    // deletable ones: an item is triggered only when no remaining item depends on it.
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
    s.check_absent(Res::DataObject, "do-entry-out");
    for name in ["do-entry-in", "do-namespace"] {
        let d = s.get(Res::DataObject, name);
        s.ok(
            &format!("DataObject {name} remains (not owned)"),
            d.is_some(),
            || "gone".into(),
        );
    }
    let with_annotation = s.recorder.first(Res::DeployItem, &keep_di, |e| {
        annotation(
            &e.object,
            "landscaper.gardener.cloud/delete-without-uninstall",
        ) == Some("true")
    });
    s.ok_with(
        "keep-resources: the DeployItem was removed without uninstall (carried delete-without-uninstall)",
        with_annotation.is_some(),
        |s| {
            format!(
                "annotations seen: {:?}",
                s.recorder
                    .events(Res::DeployItem, &keep_di)
                    .iter()
                    .map(|e| e.object["metadata"]["annotations"].to_string())
                    .collect::<Vec<_>>()
            )
        },
    );
    s.check_absent(Res::Target, "my-cluster-b");
    let hello = s.must("hello-world");
    s.ok(
        "hello-world: untouched, still Succeeded",
        phase_of(&hello) == "Succeeded"
            && str_at(&hello, "/status/jobID") == hello_job
            && hello.pointer("/metadata/deletionTimestamp").is_none(),
        || describe_installation(&hello),
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
}

#[test]
fn scenario_13_deletion() {
    let Some(mut s) = Scenario::start("13", "mock") else {
        return;
    };
    scenario_13_steps_1_to_3(&mut s);

    // Step 4: Target my-cluster-b restored, then a reconcile requested on the deleting
    // installation through the API (what `kubectl annotate … operation=reconcile` sends).
    let hello = s.must("hello-world");
    let hello_di = s
        .deploy_items_of(&hello)
        .first()
        .map(|d| name_of(d).to_string());
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
        if let Some(di) = hello_di {
            s.check_absent(Res::DeployItem, &di);
        }
    }
    s.finish();
}

#[test]
fn scenario_14_upgrade() {
    let Some(mut s) = Scenario::start("14", "mock") else {
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
    s.with(
        "hello-world: providerStatus.chart hello-world:1.0.0, manifests = [ConfigMap acc-14/hello-world {testData: hello}]",
        di.as_ref(),
        |d| {
            let p = &d["status"]["providerStatus"];
            let m = &p["manifests"];
            (p["chart"] == "hello-world:1.0.0"
                && m.as_array().is_some_and(|a| a.len() == 1)
                && m[0]["kind"] == "ConfigMap"
                && m[0]["data"] == json!({"testData": "hello"}))
            .then_some(())
            .ok_or_else(|| format!("providerStatus {p}"))
        },
    );
    let hello_di_uid = di.map(|d| uid_of(&d).to_string()).unwrap_or_default();
    let inline = s.must("inline");
    s.check_installation(&inline, "Succeeded");
    let items = s.check_items(&inline, &["item-1"], "Succeeded");
    s.ok(
        "inline: ConfigMap acc-14/cm-1 {foo: bar}",
        items.first().is_some_and(|d| {
            let m = first_manifest(d);
            m["metadata"]["name"] == "cm-1" && m["data"] == json!({"foo": "bar"})
        }),
        || format!("{:?}", items.first().map(first_manifest)),
    );
    let item1_uid = items
        .first()
        .map(|d| uid_of(d).to_string())
        .unwrap_or_default();
    let auto = s.must("auto");
    s.check_installation(&auto, "Succeeded");
    let di = s.deploy_item(&auto, "default-deploy-item");
    s.with(
        "auto: ConfigMap acc-14/auto {revision: \"1\"}",
        di.as_ref(),
        |d| {
            let m = first_manifest(d);
            (m["metadata"]["name"] == "auto" && m["data"] == json!({"revision": "1"}))
                .then_some(())
                .ok_or_else(|| format!("{m}"))
        },
    );
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
    s.with(
        "hello-world: providerStatus.chart hello-world:1.0.1, manifests = [Secret], same DeployItem object",
        di.as_ref(),
        |d| {
            let p = &d["status"]["providerStatus"];
            let m = &p["manifests"];
            (p["chart"] == "hello-world:1.0.1"
                && m.as_array().is_some_and(|a| a.len() == 1)
                && m[0]["kind"] == "Secret"
                && uid_of(d) == hello_di_uid)
                .then_some(())
                .ok_or_else(|| format!("uid {} (step 1 {hello_di_uid}), providerStatus {p}", uid_of(d)))
        },
    );
    let inline = s.must("inline");
    s.check_installation(&inline, "Succeeded");
    let items = s.check_items(&inline, &["item-1", "item-2", "item-3"], "Succeeded");
    for item in &items {
        let n = item_name(item).to_string();
        let m = first_manifest(item);
        s.ok(
            &format!(
                "inline: {n} ConfigMap cm-{} {{foo: bar}}",
                n.trim_start_matches("item-")
            ),
            m["metadata"]["name"] == format!("cm-{}", n.trim_start_matches("item-"))
                && m["data"] == json!({"foo": "bar"}),
            || format!("{m}"),
        );
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
    let di = s.deploy_item(&auto, "default-deploy-item");
    s.with(
        "auto: ConfigMap acc-14/auto {revision: \"2\"}",
        di.as_ref(),
        |d| {
            let m = first_manifest(d);
            (m["data"] == json!({"revision": "2"}))
                .then_some(())
                .ok_or_else(|| format!("{m}"))
        },
    );
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
    s.ok(
        "inline: ConfigMap cm-1 == {key1: value1} (exact)",
        items
            .first()
            .is_some_and(|d| first_manifest(d)["data"] == json!({"key1": "value1"})),
        || format!("{:?}", items.first().map(first_manifest)),
    );
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
    s.ok(
        "inline: ConfigMap cm-1 == {foo: bar}",
        items
            .first()
            .is_some_and(|d| first_manifest(d)["data"] == json!({"foo": "bar"})),
        || format!("{:?}", items.first().map(first_manifest)),
    );
    s.check_absent(Res::DataObject, "do-entry-out");
    let entry_in = s.get(Res::DataObject, "do-entry-in");
    s.ok(
        "DataObject do-entry-in still exists",
        entry_in.is_some(),
        || "gone".into(),
    );
    s.check_oracle(4);
    s.finish();
}

#[test]
fn scenario_15_spiff_executions() {
    let Some(mut s) = Scenario::start("15", "mock") else {
        return;
    };
    s.apply_step(1);
    s.settle(
        &[
            want("import-execution-1", "Succeeded", Job::New),
            want("import-execution-2", "Failed", Job::New),
            want("root", "Succeeded", Job::New),
            want("root-spiff-deploy", "Succeeded", Job::New),
        ],
        STEP,
    );
    let ie1 = s.must("import-execution-1");
    s.check_installation(&ie1, "Succeeded");
    let di = s.deploy_item(&ie1, "default");
    s.with(
        "import-execution-1: DeployItem default spec.config.imps {arbitraryImport: foo, mapToList [a→b, foo→bar], no errors}",
        di.as_ref(),
        |d| {
            let imps = &d["spec"]["config"]["imps"];
            let mut list: Vec<Value> = imps["mapToList"].as_array().cloned().unwrap_or_default();
            list.sort_by_key(|v| v["key"].as_str().unwrap_or("").to_string());
            (imps["arbitraryImport"] == "foo"
                && list == vec![json!({"key": "a", "value": "b"}), json!({"key": "foo", "value": "bar"})]
                && imps.get("errors").is_none())
            .then_some(())
            .ok_or_else(|| format!("imps {imps}"))
        },
    );
    let ie2 = s.must("import-execution-2");
    s.check_installation(&ie2, "Failed");
    s.ok(
        "import-execution-2: lastError contains \"a foo error occurred\", no DeployItem",
        last_error(&ie2).contains("a foo error occurred") && s.deploy_items_of(&ie2).is_empty(),
        || last_error_of(&ie2),
    );
    let root = s.must("root");
    s.check_installation(&root, "Succeeded");
    let sub = s.subinstallation("root", "subinst");
    s.check_phase("root: subinstallation subinst", sub.as_ref(), "Succeeded");
    if let Some(sub) = &sub {
        let di = s.deploy_item(sub, "submain-import");
        s.with(
            "subinst: DeployItem submain-import Succeeded, providerStatus.importDataMappings == myImportMapping",
            di.as_ref(),
            |d| {
                (phase_of(d) == "Succeeded"
                    && d["status"]["providerStatus"]["importDataMappings"] == "myImportMapping")
                    .then_some(())
                    .ok_or_else(|| describe_installation(d))
            },
        );
    }
    s.check_context_data_object("root", "subDataExp", &json!("secretValue"));
    let mock_target = json!({"spec": {"type": "landscaper.gardener.cloud/mock", "config": {"value": "targetValue"}}});
    for key in ["subTargetExp", "subTargetExpFromList"] {
        let t = s.context_object(Res::Target, "Inst.root", key);
        s.with(
            &format!("Target Inst.root/{key}: spec {{type: mock, config: {{value: targetValue}}}}"),
            t.as_ref(),
            |t| same_target(t, Some(&mock_target)),
        );
    }
    s.check_data_object("dataExp", &json!("secretValue"));
    s.check_data_object("additionalDataExp", &json!("mapping-secretValue"));
    for key in ["targetExp", "targetExpFromList"] {
        let t = s.get(Res::Target, key);
        s.with(
            &format!("Target {key}: spec {{type: mock, config: {{value: targetValue}}}}"),
            t.as_ref(),
            |t| same_target(t, Some(&mock_target)),
        );
    }
    for (res, name) in [
        (Res::DataObject, "dataExp"),
        (Res::DataObject, "additionalDataExp"),
        (Res::Target, "targetExp"),
        (Res::Target, "targetExpFromList"),
    ] {
        let obj = s.get(res, name);
        s.with(
            &format!("{res:?} {name}: labels sourceType export, source Inst.root, no context"),
            obj.as_ref(),
            |o| {
                (label(o, "data.landscaper.gardener.cloud/sourceType") == Some("export")
                    && label(o, "data.landscaper.gardener.cloud/source") == Some("Inst.root")
                    && label(o, "data.landscaper.gardener.cloud/context")
                        .unwrap_or("")
                        .is_empty())
                .then_some(())
                .ok_or_else(|| format!("labels {}", o["metadata"]["labels"]))
            },
        );
    }
    let rsd = s.must("root-spiff-deploy");
    s.check_installation(&rsd, "Succeeded");
    s.check_items(&rsd, &["subexec"], "Succeeded");
    let sub = s.subinstallation("root-spiff-deploy", "subinst");
    s.check_phase(
        "root-spiff-deploy: subinstallation subinst",
        sub.as_ref(),
        "Succeeded",
    );
    if let Some(sub) = &sub {
        s.check_items(sub, &["subinst"], "Succeeded");
    }
    s.check_oracle(1);
    s.finish();
}

/// The revision at which the Installation `name` last entered `Succeeded`, from
/// `/appliance/v1/history`.
fn latest_finish_from_history(s: &Scenario, name: &str) -> Option<u64> {
    let history = s.daemon.get_json(&format!(
        "/appliance/v1/history?kind=Installation&namespace=cu-example&name={name}&limit=10000"
    ))?;
    let mut entries: Vec<&serde_json::Value> = history["items"].as_array()?.iter().collect();
    entries.sort_by_key(|e| e["revision"].as_u64().unwrap_or(0));
    entries
        .iter()
        .filter(|e| e["phase"] == "Succeeded" && e["previousPhase"] != "Succeeded")
        .filter_map(|e| e["revision"].as_u64())
        .next_back()
}
