//! Server-side Table conversion: the cells kubectl 1.37 prints verbatim.
//! The module is included by path so these tests run whether or not `lib.rs` declares it.

#[allow(dead_code)]
#[path = "../src/table.rs"]
mod table;

use serde_json::{Value, json};
use std::time::Duration;
use table::{Columns, PrinterColumn, human_duration, to_table, to_table_row_event};

fn now() -> jiff::Timestamp {
    "2026-11-29T12:00:00Z".parse().unwrap()
}

fn builtin(kind: &str) -> Columns {
    Columns::Builtin {
        kind: kind.to_owned(),
    }
}

fn column_names(table: &Value) -> Vec<String> {
    table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect()
}

fn cells(columns: &Columns, object: &Value) -> Vec<Value> {
    let table = to_table(columns, &[object], "7", now());
    table["rows"][0]["cells"].as_array().unwrap().clone()
}

#[test]
fn human_duration_follows_kubectl_rules() {
    let cases = [
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (200, "3m20s"),
        (599, "9m59s"),
        (600, "10m"),
        (3600, "60m"),
        (3 * 3600 - 1, "179m"),
        (3 * 3600, "3h"),
        (5 * 3600 + 30 * 60, "5h30m"),
        (8 * 3600, "8h"),
        (47 * 3600, "47h"),
        (48 * 3600, "2d"),
        (3 * 86400 + 4 * 3600, "3d4h"),
        (8 * 86400, "8d"),
        (400 * 86400, "400d"),
        (730 * 86400, "2y"),
        (760 * 86400, "2y30d"),
        (9 * 365 * 86400, "9y"),
    ];
    for (secs, want) in cases {
        assert_eq!(human_duration(Duration::from_secs(secs)), want, "{secs}s");
    }
}

#[test]
fn a_table_has_the_meta_v1_shape_with_partial_object_metadata_rows() {
    let cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "x", "resourceVersion": "5", "uid": "u1",
                     "creationTimestamp": "2026-11-29T11:59:00Z", "labels": {"a": "b"}},
        "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}
    });
    let table = to_table(&builtin("ConfigMap"), &[&cm], "9", now());
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(table["metadata"]["resourceVersion"], "9");
    assert_eq!(column_names(&table), ["Name", "Data", "Age"]);
    assert_eq!(table["columnDefinitions"][0]["format"], "name");
    assert_eq!(table["rows"][0]["cells"], json!(["c", 3, "60s"]));
    assert_eq!(
        table["rows"][0]["object"],
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": cm["metadata"]})
    );
    let event = to_table_row_event(&builtin("ConfigMap"), &cm, now());
    assert_eq!(event["metadata"]["resourceVersion"], "5");
    assert_eq!(event["rows"].as_array().unwrap().len(), 1);
}

fn gameserver_columns() -> Columns {
    let crd_columns = json!([
        {"jsonPath": ".spec.templateRef.name", "name": "Template", "type": "string"},
        {"jsonPath": ".status.phase", "name": "Phase", "type": "string"},
        {"jsonPath": ".status.agent.playersOnline", "name": "Players", "type": "integer"},
        {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"},
        {"jsonPath": ".status.idle.asleep", "name": "Asleep", "priority": 1, "type": "boolean", "description": "asleep?"},
        {"jsonPath": ".spec.ports[0].name", "name": "First Port", "type": "string"},
        {"jsonPath": ".spec.ports[*].port", "name": "Port", "type": "number", "format": "int32"}
    ]);
    Columns::Crd {
        columns: crd_columns
            .as_array()
            .unwrap()
            .iter()
            .map(|c| PrinterColumn::from_crd(c).unwrap())
            .collect(),
    }
}

#[test]
fn crd_printer_columns_follow_the_crd() {
    let columns = gameserver_columns();
    let gs = json!({
        "apiVersion": "gameplane.local/v1alpha1", "kind": "GameServer",
        "metadata": {"name": "mc1", "namespace": "x", "creationTimestamp": "2026-11-29T09:00:00Z"},
        "spec": {"templateRef": {"name": "minecraft"}, "ports": [{"name": "game", "port": 25565}]},
        "status": {"phase": "Running", "agent": {"playersOnline": 2}, "idle": {"asleep": false}}
    });
    let table = to_table(&columns, &[&gs], "3", now());
    assert_eq!(
        column_names(&table),
        [
            "Name",
            "Template",
            "Phase",
            "Players",
            "Age",
            "Asleep",
            "First Port",
            "Port"
        ]
    );
    assert_eq!(table["columnDefinitions"][5]["priority"], 1);
    assert_eq!(table["columnDefinitions"][5]["description"], "asleep?");
    assert_eq!(table["columnDefinitions"][7]["format"], "int32");
    assert_eq!(
        table["rows"][0]["cells"],
        json!([
            "mc1",
            "minecraft",
            "Running",
            2,
            "3h",
            false,
            "game",
            25565.0
        ])
    );
    // Missing fields print as blank (null) cells, never as errors.
    let bare = json!({"metadata": {"name": "mc2", "creationTimestamp": "bogus"}, "spec": {}});
    assert_eq!(
        cells(&columns, &bare),
        [
            json!("mc2"),
            Value::Null,
            Value::Null,
            Value::Null,
            json!("<invalid>"),
            Value::Null,
            Value::Null,
            Value::Null
        ]
    );
}

#[test]
fn a_crd_without_columns_prints_name_and_age() {
    let columns = Columns::Crd { columns: vec![] };
    let obj = json!({"metadata": {"name": "b", "creationTimestamp": "2026-11-27T12:00:00Z"}});
    let table = to_table(&columns, &[&obj], "1", now());
    assert_eq!(column_names(&table), ["Name", "Age"]);
    assert_eq!(table["rows"][0]["cells"], json!(["b", "2d"]));
    assert!(PrinterColumn::from_crd(&json!({"name": "x"})).is_none());
}

fn pod(status: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p1", "namespace": "x", "creationTimestamp": "2026-11-29T11:55:00Z"},
        "spec": {"containers": [{"name": "a", "image": "i"}, {"name": "b", "image": "j"}], "nodeName": "node-1"},
        "status": status
    })
}

#[test]
fn pod_columns_and_a_running_pod() {
    let p = pod(json!({
        "phase": "Running", "podIP": "10.0.0.5", "podIPs": [{"ip": "10.0.0.5"}],
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [
            {"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}},
            {"name": "b", "ready": true, "restartCount": 2, "state": {"running": {}},
             "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2026-11-29T11:59:30Z"}}}
        ]
    }));
    let table = to_table(&builtin("Pod"), &[&p], "1", now());
    assert_eq!(
        column_names(&table),
        [
            "Name",
            "Ready",
            "Status",
            "Restarts",
            "Age",
            "IP",
            "Node",
            "Nominated Node",
            "Readiness Gates"
        ]
    );
    let priorities: Vec<i64> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["priority"].as_i64().unwrap())
        .collect();
    assert_eq!(priorities, [0, 0, 0, 0, 0, 1, 1, 1, 1]);
    assert_eq!(
        table["rows"][0]["cells"],
        json!([
            "p1",
            "2/2",
            "Running",
            "2 (30s ago)",
            "5m",
            "10.0.0.5",
            "node-1",
            "<none>",
            "<none>"
        ])
    );
}

#[test]
fn pod_status_shows_waiting_reasons_completion_and_termination() {
    let waiting = pod(json!({"phase": "Pending", "containerStatuses": [
        {"name": "a", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "ImagePullBackOff"}}},
        {"name": "b", "ready": true, "restartCount": 0, "state": {"running": {}}}
    ]}));
    let c = cells(&builtin("Pod"), &waiting);
    assert_eq!(
        (&c[1], &c[2], &c[3]),
        (&json!("1/2"), &json!("ImagePullBackOff"), &json!("0"))
    );

    let crash = pod(json!({"phase": "Running", "containerStatuses": [
        {"name": "a", "ready": false, "restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
    ]}));
    assert_eq!(cells(&builtin("Pod"), &crash)[2], "CrashLoopBackOff");

    let done = pod(json!({"phase": "Succeeded", "containerStatuses": [
        {"name": "a", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
        {"name": "b", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
    ]}));
    assert_eq!(cells(&builtin("Pod"), &done)[2], "Completed");

    let failed = pod(json!({"phase": "Failed", "containerStatuses": [
        {"name": "a", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 3}}}
    ]}));
    assert_eq!(cells(&builtin("Pod"), &failed)[2], "ExitCode:3");

    let mut deleting = pod(json!({"phase": "Running", "containerStatuses": [
        {"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}}
    ]}));
    deleting["metadata"]["deletionTimestamp"] = json!("2026-11-29T11:59:59Z");
    assert_eq!(cells(&builtin("Pod"), &deleting)[2], "Terminating");

    let pending = pod(json!({"phase": "Pending"}));
    let c = cells(&builtin("Pod"), &pending);
    assert_eq!(
        (&c[1], &c[2], &c[5]),
        (&json!("0/2"), &json!("Pending"), &json!("<none>"))
    );

    let mut init = pod(json!({"phase": "Pending", "initContainerStatuses": [
        {"name": "init", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}}
    ]}));
    init["spec"]["initContainers"] = json!([{"name": "init", "image": "i"}]);
    assert_eq!(cells(&builtin("Pod"), &init)[2], "Init:0/1");
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one printer table per kind, each a few lines of fixture and assertion"
)]
fn workload_and_storage_printers() {
    let sts = json!({"kind": "StatefulSet", "metadata": {"name": "mc", "creationTimestamp": "2026-11-29T11:00:00Z"},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "game", "image": "fixture:1"}]}}},
        "status": {"readyReplicas": 1}});
    assert_eq!(
        cells(&builtin("StatefulSet"), &sts),
        [
            json!("mc"),
            json!("1/1"),
            json!("60m"),
            json!("game"),
            json!("fixture:1")
        ]
    );

    let job = json!({"kind": "Job", "metadata": {"name": "backup", "creationTimestamp": "2026-11-29T11:58:00Z"},
        "spec": {"completions": 1, "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}},
                 "template": {"spec": {"containers": [{"name": "restic", "image": "restic:0.14"}]}}},
        "status": {"succeeded": 1, "startTime": "2026-11-29T11:58:00Z", "completionTime": "2026-11-29T11:58:12Z",
                   "conditions": [{"type": "Complete", "status": "True"}]}});
    let table = to_table(&builtin("Job"), &[&job], "1", now());
    assert_eq!(
        column_names(&table),
        [
            "Name",
            "Status",
            "Completions",
            "Duration",
            "Age",
            "Containers",
            "Images",
            "Selector"
        ]
    );
    assert_eq!(
        table["rows"][0]["cells"],
        json!([
            "backup",
            "Complete",
            "1/1",
            "12s",
            "2m",
            "restic",
            "restic:0.14",
            "batch.kubernetes.io/controller-uid=u"
        ])
    );
    let running = json!({"kind": "Job", "metadata": {"name": "j"}, "spec": {"parallelism": 2},
        "status": {"startTime": "2026-11-29T11:59:00Z"}});
    let c = cells(&builtin("Job"), &running);
    assert_eq!(
        (&c[1], &c[2], &c[3], &c[4]),
        (
            &json!("Running"),
            &json!("0/1 of 2"),
            &json!("60s"),
            &json!("<unknown>")
        )
    );

    let pvc = json!({"kind": "PersistentVolumeClaim", "metadata": {"name": "data-mc-0", "creationTimestamp": "2026-11-29T11:59:00Z"},
        "spec": {"volumeName": "pv-1", "storageClassName": "local-path", "accessModes": ["ReadWriteOnce"]},
        "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}});
    let table = to_table(&builtin("PersistentVolumeClaim"), &[&pvc], "1", now());
    assert_eq!(
        column_names(&table),
        [
            "Name",
            "Status",
            "Volume",
            "Capacity",
            "Access Modes",
            "StorageClass",
            "VolumeAttributesClass",
            "Age",
            "VolumeMode"
        ]
    );
    assert_eq!(
        table["rows"][0]["cells"],
        json!([
            "data-mc-0",
            "Bound",
            "pv-1",
            "1Gi",
            "RWO",
            "local-path",
            "<unset>",
            "60s",
            "<unset>"
        ])
    );
    let pending = json!({"metadata": {"name": "p"}, "spec": {"storageClassName": "local-path"}, "status": {"phase": "Pending"}});
    let c = cells(&builtin("PersistentVolumeClaim"), &pending);
    assert_eq!(
        (&c[1], &c[2], &c[3], &c[4]),
        (&json!("Pending"), &json!(""), &json!(""), &json!(""))
    );

    let pv = json!({"metadata": {"name": "pv-1", "creationTimestamp": "2026-11-29T11:59:00Z"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce", "ReadWriteMany"],
                 "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "local-path",
                 "claimRef": {"namespace": "x", "name": "data-mc-0"}},
        "status": {"phase": "Bound"}});
    assert_eq!(
        cells(&builtin("PersistentVolume"), &pv),
        json!([
            "pv-1",
            "1Gi",
            "RWO,RWX",
            "Delete",
            "Bound",
            "x/data-mc-0",
            "local-path",
            "<unset>",
            "",
            "60s",
            "<unset>"
        ])
        .as_array()
        .unwrap()
        .clone()
    );

    let sc = json!({"metadata": {"name": "local-path", "creationTimestamp": "2026-11-29T11:59:00Z",
        "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": "rancher.io/local-path", "volumeBindingMode": "WaitForFirstConsumer"});
    assert_eq!(
        cells(&builtin("StorageClass"), &sc),
        json!([
            "local-path (default)",
            "rancher.io/local-path",
            "Delete",
            "WaitForFirstConsumer",
            false,
            "60s"
        ])
        .as_array()
        .unwrap()
        .clone()
    );
}

#[test]
fn core_object_printers() {
    let ns = json!({"metadata": {"name": "x", "creationTimestamp": "2026-11-29T11:59:50Z"}, "status": {"phase": "Active"}});
    assert_eq!(
        cells(&builtin("Namespace"), &ns),
        [json!("x"), json!("Active"), json!("10s")]
    );

    let secret = json!({"metadata": {"name": "s"}, "type": "Opaque", "data": {"a": "Yg=="}});
    assert_eq!(
        cells(&builtin("Secret"), &secret),
        [json!("s"), json!("Opaque"), json!(1), json!("<unknown>")]
    );

    let svc = json!({"metadata": {"name": "mc", "creationTimestamp": "2026-11-29T11:59:00Z"},
        "spec": {"type": "NodePort", "clusterIP": "10.96.0.10", "selector": {"app": "mc", "a": "b"},
                 "ports": [{"port": 25565, "protocol": "TCP", "nodePort": 30565}, {"port": 25575}]}});
    let table = to_table(&builtin("Service"), &[&svc], "1", now());
    assert_eq!(
        column_names(&table),
        [
            "Name",
            "Type",
            "Cluster-IP",
            "External-IP",
            "Port(s)",
            "Age",
            "Selector"
        ]
    );
    assert_eq!(
        table["rows"][0]["cells"],
        json!([
            "mc",
            "NodePort",
            "10.96.0.10",
            "<none>",
            "25565:30565/TCP,25575/TCP",
            "60s",
            "a=b,app=mc"
        ])
    );
    let lb =
        json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "clusterIP": "None"}});
    assert_eq!(cells(&builtin("Service"), &lb)[3], "<pending>");

    let sa = json!({"metadata": {"name": "default"}});
    assert_eq!(cells(&builtin("ServiceAccount"), &sa)[1], 0);

    let ep = json!({"metadata": {"name": "mc"}, "subsets": [{"addresses": [
        {"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}, {"ip": "10.0.0.3"}, {"ip": "10.0.0.4"}],
        "ports": [{"port": 25565}]}]});
    assert_eq!(
        cells(&builtin("Endpoints"), &ep)[1],
        "10.0.0.1:25565,10.0.0.2:25565,10.0.0.3:25565 + 1 more..."
    );
    assert_eq!(
        cells(&builtin("Endpoints"), &json!({"metadata": {"name": "e"}}))[1],
        "<none>"
    );

    let crd = json!({"metadata": {"name": "gameservers.gameplane.local", "creationTimestamp": "2026-11-29T11:00:00Z"}});
    let table = to_table(&builtin("CustomResourceDefinition"), &[&crd], "1", now());
    assert_eq!(column_names(&table), ["Name", "Created At"]);
    assert_eq!(
        table["rows"][0]["cells"],
        json!(["gameservers.gameplane.local", "2026-11-29T11:00:00Z"])
    );

    let node = json!({"metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/control-plane": ""}},
        "spec": {"unschedulable": true},
        "status": {"conditions": [{"type": "Ready", "status": "True"}], "nodeInfo": {"kubeletVersion": "v1.37.1"},
                   "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}]}});
    let c = cells(&builtin("Node"), &node);
    assert_eq!(
        c,
        json!([
            "n1",
            "Ready,SchedulingDisabled",
            "control-plane",
            "<unknown>",
            "v1.37.1",
            "127.0.0.1",
            "<none>",
            "<unknown>",
            "<unknown>",
            "<unknown>"
        ])
        .as_array()
        .unwrap()
        .clone()
    );

    let other = json!({"metadata": {"name": "w", "creationTimestamp": "2026-11-29T11:59:00Z"}});
    let table = to_table(&builtin("Widget"), &[&other], "1", now());
    assert_eq!(column_names(&table), ["Name", "Age"]);
    assert_eq!(table["rows"][0]["cells"], json!(["w", "60s"]));
}

#[test]
fn event_printer() {
    let ev = json!({"metadata": {"name": "mc.1"}, "type": "Warning", "reason": "BackOff",
        "involvedObject": {"kind": "Pod", "name": "mc-0", "fieldPath": "spec.containers{game}"},
        "source": {"component": "kubelet", "host": "n1"}, "message": " Back-off restarting \n",
        "firstTimestamp": "2026-11-29T11:50:00Z", "lastTimestamp": "2026-11-29T11:59:00Z", "count": 5});
    let table = to_table(&builtin("Event"), &[&ev], "1", now());
    assert_eq!(
        column_names(&table),
        [
            "Last Seen",
            "Type",
            "Reason",
            "Object",
            "Subobject",
            "Source",
            "Message",
            "First Seen",
            "Count",
            "Name"
        ]
    );
    assert_eq!(
        table["rows"][0]["cells"],
        json!([
            "60s",
            "Warning",
            "BackOff",
            "pod/mc-0",
            "spec.containers{game}",
            "kubelet, n1",
            "Back-off restarting",
            "10m",
            5,
            "mc.1"
        ])
    );
    let fresh = json!({"metadata": {"name": "e"}, "eventTime": "2026-11-29T11:59:58.000000Z", "involvedObject": {"kind": "Job"},
        "reportingComponent": "job-controller"});
    let c = cells(&builtin("Event"), &fresh);
    assert_eq!(
        (&c[0], &c[3], &c[5], &c[8]),
        (
            &json!("2s"),
            &json!("job"),
            &json!("job-controller"),
            &json!(1)
        )
    );
}
