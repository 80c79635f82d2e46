//! kubectl 1.37 against the API server's authentication and RBAC: `auth can-i` (with `--as`
//! and `--list`), `--as` impersonation held to RBAC with the Forbidden message of a real
//! cluster, Roles and RoleBindings from YAML and from the `create role|rolebinding`
//! generators, `create token`, `auth whoami` and `get apiservices`.

mod common;

use std::path::PathBuf;
use std::process::Stdio;

use common::{client_with_token, start, within};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use rehearsal_apiserver::ApiServer;
use tokio::process::Command;

fn kubectl_binary() -> PathBuf {
    if let Ok(path) = std::env::var("REHEARSAL_KUBECTL") {
        return PathBuf::from(path);
    }
    let fallback = PathBuf::from("/opt/rehearsal-kubectl/bin/kubectl");
    assert!(
        fallback.exists(),
        "kubectl 1.37 not found: set REHEARSAL_KUBECTL or run scripts/setup.sh --tests"
    );
    fallback
}

struct Kubectl {
    binary: PathBuf,
    dir: tempfile::TempDir,
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Kubectl {
    fn new(server: &ApiServer) -> Self {
        let dir = tempfile::tempdir().unwrap();
        server
            .write_kubeconfig(dir.path().join("kubeconfig"))
            .unwrap();
        Kubectl {
            binary: kubectl_binary(),
            dir,
        }
    }

    async fn run(&self, args: &[&str]) -> Ran {
        let child = Command::new(&self.binary)
            .arg("--kubeconfig")
            .arg(self.dir.path().join("kubeconfig"))
            .args(args)
            .env_remove("KUBECONFIG")
            .env("HOME", self.dir.path())
            .env("KUBECACHEDIR", self.dir.path().join("cache"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("kubectl starts");
        let out = within(
            &format!("kubectl {}", args.join(" ")),
            child.wait_with_output(),
        )
        .await
        .unwrap();
        Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    async fn ok(&self, args: &[&str]) -> String {
        let ran = self.run(args).await;
        assert_eq!(
            ran.code,
            0,
            "kubectl {} failed:\n{}\n{}",
            args.join(" "),
            ran.stdout,
            ran.stderr
        );
        ran.stdout
    }

    fn write(&self, name: &str, text: &str) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    }
}

const ROBOT: &str = "--as=system:serviceaccount:team:robot";

const RBAC_YAML: &str = "\
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: pod-reader
  namespace: team
rules:
  - apiGroups: [\"\"]
    resources: [\"pods\"]
    verbs: [\"get\", \"list\", \"watch\"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: robot-reads-pods
  namespace: team
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: pod-reader
subjects:
  - kind: ServiceAccount
    name: robot
    namespace: team
";

#[tokio::test(flavor = "multi_thread")]
#[expect(
    clippy::too_many_lines,
    reason = "one server and a sequence of kubectl calls whose outcomes depend on the ones before"
)]
async fn can_i_impersonation_and_roles_from_yaml() {
    let (server, _admin) = start().await;
    let k = Kubectl::new(&server);
    k.ok(&["create", "namespace", "team"]).await;
    k.ok(&["create", "namespace", "other"]).await;
    k.ok(&["-n", "team", "create", "serviceaccount", "robot"])
        .await;

    // Nothing granted yet.
    let no = k
        .run(&["-n", "team", "auth", "can-i", "list", "pods", ROBOT])
        .await;
    assert_eq!((no.code, no.stdout.trim()), (1, "no"), "{}", no.stderr);
    let denied = k.run(&["-n", "team", "get", "pods", ROBOT]).await;
    assert_eq!(denied.code, 1);
    assert_eq!(
        denied.stderr.trim(),
        "Error from server (Forbidden): pods is forbidden: User \"system:serviceaccount:team:robot\" cannot list resource \"pods\" in API group \"\" in the namespace \"team\""
    );

    // A Role and a RoleBinding from YAML.
    let file = k.write("rbac.yaml", RBAC_YAML);
    let created = k.ok(&["create", "-f", &file]).await;
    assert!(
        created.contains("role.rbac.authorization.k8s.io/pod-reader created"),
        "{created}"
    );
    assert!(
        created.contains("rolebinding.rbac.authorization.k8s.io/robot-reads-pods created"),
        "{created}"
    );
    let yes = k
        .ok(&["-n", "team", "auth", "can-i", "list", "pods", ROBOT])
        .await;
    assert_eq!(yes.trim(), "yes");
    k.ok(&["-n", "team", "get", "pods", ROBOT]).await;
    let elsewhere = k.run(&["-n", "other", "get", "pods", ROBOT]).await;
    assert!(
        elsewhere
            .stderr
            .contains("cannot list resource \"pods\" in API group \"\" in the namespace \"other\""),
        "{}",
        elsewhere.stderr
    );
    let exec = k
        .run(&["-n", "team", "auth", "can-i", "create", "pods/exec", ROBOT])
        .await;
    assert_eq!(exec.stdout.trim(), "no");
    let list = k
        .ok(&["-n", "team", "auth", "can-i", "--list", ROBOT])
        .await;
    assert!(
        list.lines()
            .any(|l| l.starts_with("pods ") && l.contains("[get list watch]")),
        "{list}"
    );

    // The generators (protobuf bodies): a Role for configmaps and its binding.
    k.ok(&[
        "-n",
        "team",
        "create",
        "role",
        "cm-editor",
        "--verb=get,update",
        "--resource=configmaps",
        "--resource-name=settings",
    ])
    .await;
    k.ok(&[
        "-n",
        "team",
        "create",
        "rolebinding",
        "robot-edits",
        "--role=cm-editor",
        "--serviceaccount=team:robot",
    ])
    .await;
    let named = k
        .ok(&[
            "-n",
            "team",
            "auth",
            "can-i",
            "update",
            "configmaps/settings",
            ROBOT,
        ])
        .await;
    assert_eq!(named.trim(), "yes");
    let other_name = k
        .run(&[
            "-n",
            "team",
            "auth",
            "can-i",
            "update",
            "configmaps/other",
            ROBOT,
        ])
        .await;
    assert_eq!(other_name.stdout.trim(), "no");
    let bindings = k
        .ok(&["-n", "team", "get", "rolebindings", "-o", "wide"])
        .await;
    assert!(
        bindings.contains("Role/cm-editor") && bindings.contains("team/robot"),
        "{bindings}"
    );

    // Identity: the impersonated user, and a token kubectl requests that kube-rs can use.
    let whoami = k.ok(&["auth", "whoami", ROBOT]).await;
    assert!(
        whoami.contains("system:serviceaccount:team:robot"),
        "{whoami}"
    );
    assert!(whoami.contains("system:serviceaccounts:team"), "{whoami}");
    let token = k
        .ok(&["-n", "team", "create", "token", "robot", "--duration=15m"])
        .await;
    let robot = client_with_token(&server, Some(token.trim()));
    let pods: Api<Pod> = Api::namespaced(robot.clone(), "team");
    pods.list(&ListParams::default()).await.unwrap();
    let other: Api<Pod> = Api::namespaced(robot, "other");
    assert_eq!(
        common::status_of(other.list(&ListParams::default()).await).code,
        403
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn apiservices_and_default_roles_are_listed() {
    let (server, _admin) = start().await;
    let k = Kubectl::new(&server);
    let apiservices = k.ok(&["get", "apiservices"]).await;
    let header = apiservices.lines().next().unwrap();
    assert!(
        header.starts_with("NAME") && header.contains("SERVICE") && header.contains("AVAILABLE"),
        "{apiservices}"
    );
    for name in [
        "v1.",
        "v1.apps",
        "v1.rbac.authorization.k8s.io",
        "v1.authorization.k8s.io",
    ] {
        let row = apiservices
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} not listed:\n{apiservices}"));
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(&cells[1..3], ["Local", "True"], "{row}");
    }
    let roles = k.ok(&["get", "clusterroles", "-o", "name"]).await;
    for role in [
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:discovery",
        "system:basic-user",
    ] {
        assert!(
            roles
                .lines()
                .any(|l| l == format!("clusterrole.rbac.authorization.k8s.io/{role}")),
            "{role}: {roles}"
        );
    }
    let resources = k
        .ok(&[
            "api-resources",
            "--api-group=rbac.authorization.k8s.io",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(
        resources.lines().collect::<Vec<_>>(),
        [
            "clusterrolebindings.rbac.authorization.k8s.io",
            "clusterroles.rbac.authorization.k8s.io",
            "rolebindings.rbac.authorization.k8s.io",
            "roles.rbac.authorization.k8s.io"
        ]
    );
}
