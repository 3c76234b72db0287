"""The Kubernetes CEL libraries devcluster evaluates (kinds/crds/celib/), checked against the
cases of k8s.io/apiserver pkg/cel/library (quantity_test.go; the examples in lists.go, regex.go
and urls.go) and cel-go's ext/strings.go, through the same compile path CRD rules take."""

from __future__ import annotations

from typing import Any

import celpy.celtypes as ct
import pytest

from kubetrain.devcluster.apiserver.kinds.crds import celeval, celib, celrules


def run(expr: str, **activation: Any) -> Any:
    program, _ = celrules._program(expr)
    return program.evaluate({**celib.NAMESPACES, **{k: celeval.to_cel(v) for k, v in activation.items()}})


def fails(expr: str) -> str:
    with pytest.raises(Exception) as raised:
        run(expr)
    return str(raised.value.args[0])


QUANTITY_TRUE = [
    'isQuantity("20")',
    'isQuantity("20M")',
    'isQuantity("20Mi")',
    '!isQuantity("20Mo")',
    '!isQuantity("10Mm")',
    'quantity("200M") == quantity("200M")',
    'quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")',
    'quantity("2M") == quantity("0.002G") && quantity("2000k") == quantity("2M")',
    '!(quantity("200M") == quantity("0.3G"))',
    'quantity("50M").isLessThan(quantity("50Mi"))',
    'quantity("50M").isLessThan(quantity("100M"))',
    '!quantity("100M").isLessThan(quantity("50M"))',
    'quantity("50Mi").isGreaterThan(quantity("50M"))',
    'quantity("150Mi").isGreaterThan(quantity("100Mi"))',
    '!quantity("50M").isGreaterThan(quantity("100M"))',
    'quantity("200M").compareTo(quantity("0.2G")) == 0',
    'quantity("50M").compareTo(quantity("50Mi")) == -1',
    'quantity("50Mi").compareTo(quantity("50M")) == 1',
    'quantity("50k").add(quantity("20")) == quantity("50.02k")',
    '!quantity("50k").add(20).isLessThan(quantity("50020"))',
    'quantity("50k").sub(quantity("20")) == quantity("49.98k")',
    'quantity("50k").sub(20) == quantity("49980")',
    'quantity("50k").add(20).sub(quantity("100k")).asInteger() == -49980',
    'quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger() == 20',
    'quantity("50k").asInteger() == 50000',
    '!quantity("9999999999999999999999999999999999999G").isInteger()',
    'quantity("50").isInteger()',
    'quantity("50.703k").asApproximateFloat() == 50703.0',
    '[quantity("9999999999999999999999999999999999999")].all(x, '
    'x.add(quantity("1")).compareTo(x.add(quantity("2"))) == -1)',
    'quantity("-1n").sign() == -1 && quantity("0").sign() == 0 && quantity("1Ki").sign() == 1',
    'quantity("0.1n") == quantity("1n")',  # finer than a nano rounds up (away from zero)
    'quantity("-0.1n") == quantity("-1n")',
    'quantity("+") == quantity("0") && quantity("1.") == quantity("1") && quantity("1e3") == quantity("1k")',
]


@pytest.mark.parametrize("expr", QUANTITY_TRUE)
def test_quantity_library_cases(expr: str) -> None:
    assert run(expr) == ct.BoolType(True)


@pytest.mark.parametrize(
    ("expr", "error"),
    [
        ('quantity("10Mo")', "quantities must match the regular expression "
         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
        ('quantity("10Mm")', "unable to parse quantity's suffix"),
        ('quantity("")', "quantities must match the regular expression "
         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
        ('quantity("9999999999999999999999999999999999999G").asInteger()', "cannot convert value to integer"),
        ('isQuantity([1, 2, 3])', "no such overload"),
    ],
)  # fmt: skip
def test_quantity_library_errors(expr: str, error: str) -> None:
    assert fails(expr) == error


LISTS = [
    ("[1, 2, 3].isSorted()", True),
    ("['a', 'b', 'b', 'c'].isSorted()", True),
    ("[2.0, 1.0].isSorted()", False),
    ("[].isSorted()", True),
    ("[1, 2, 3].sum()", 6),
    ("[1.0, 2.0, 3.0].sum()", 6.0),
    ("[].sum()", 0),
    ("[1, 2, 3].min()", 1),
    ("['d', 'a', 'b', 'c'].max()", "d"),
    ("[1, 2, 3, 2].indexOf(2)", 1),
    ("['a', 'b', 'b', 'c'].lastIndexOf('b')", 2),
    ("[1.0].indexOf(1.1)", -1),
    ("[].indexOf('string')", -1),
    ("[1, 2.0].indexOf(2)", 1),  # heterogeneous equality
    ("'hello mellow'.indexOf('')", 0),
    ("'hello mellow'.indexOf('ello')", 1),
    ("'hello mellow'.indexOf('jello')", -1),
    ("'hello mellow'.indexOf('', 2)", 2),
    ("'hello mellow'.indexOf('ello', 2)", 7),
    ("'hello mellow'.lastIndexOf('')", 12),
    ("'hello mellow'.lastIndexOf('ello')", 7),
    ("'hello mellow'.lastIndexOf('ello', 6)", 1),
    ("'hello mellow'.lastIndexOf('ello', 20) == 0", "error"),
]


@pytest.mark.parametrize(("expr", "want"), LISTS)
def test_lists_library_and_string_indexes(expr: str, want: Any) -> None:
    if want == "error":
        assert fails(expr) == "index out of range: 20"
        return
    got = run(expr)
    assert got == want and type(got) is type(celeval.to_cel(want)), got


def test_lists_library_errors() -> None:
    assert fails("[].min()") == "min called on empty list"
    assert fails("[].max()") == "max called on empty list"
    assert fails("[9223372036854775807, 1].sum()") == "integer overflow"
    assert fails("[[1], [2]].isSorted()") == "no such overload"
    assert fails("'hello'.indexOf('l', 9)") == "index out of range: 9"
    assert run("self.min() == 1.5", self=[2.5, 1.5]) == ct.BoolType(True)


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ("'abc 123'.find('[0-9]+')", "123"),
        ("'abc 123'.find('xyz')", ""),
        ("'123 abc 456'.findAll('[0-9]+')", ["123", "456"]),
        ("'123 abc 456'.findAll('[0-9]+', 1)", ["123"]),
        ("'123 abc 456'.findAll('[0-9]+', 0)", []),
        ("'123 abc 456'.findAll('xyz')", []),
        ("'baaac'.findAll('a*')", ["", "aaa", ""]),  # Go: no empty match right after a match
        ("'abc'.findAll('')", ["", "", "", ""]),
    ],
)
def test_regex_library(expr: str, want: Any) -> None:
    assert run(expr) == celeval.to_cel(want)


def test_regex_library_errors() -> None:
    assert fails("'x'.find('(')").startswith("Illegal regex: error parsing regexp: ")
    assert fails("'x'.findAll('[')").startswith("Illegal regex: error parsing regexp: ")


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ("url('https://example.com/path').getScheme()", "https"),
        ("url('HTTPS://example.com/').getScheme()", "https"),
        ("url('https://example.com:80/path').getHost()", "example.com:80"),
        ("url('https://example.com:80/path').getHostname()", "example.com"),
        ("url('https://example.com:80/path').getPort()", "80"),
        ("url('https://example.com/path').getPort()", ""),
        ("url('https://[::1]:80/path').getHost()", "[::1]:80"),
        ("url('https://[::1]:80/path').getHostname()", "::1"),
        ("url('https://[::1]/path').getHostname()", "::1"),
        ("url('https://example.com/path with spaces/').getEscapedPath()", "/path%20with%20spaces/"),
        ("url('https://example.com/path%20with%20spaces/').getEscapedPath()", "/path%20with%20spaces/"),
        ("url('https://example.com/path?query=val#fragment').getEscapedPath()", "/path"),
        ("url('https://example.com').getEscapedPath()", ""),
        ("url('https://example.com/path?k1=a&k2=b&k2=c').getQuery()", {"k1": ["a"], "k2": ["b", "c"]}),
        ("url('https://example.com/path?key=a+b%20c').getQuery()", {"key": ["a b c"]}),
        ("url('https://example.com/path').getQuery()", {}),
        ("url('/absolute-path').getHostname()", ""),
        ("isURL('https://user:pass@example.com:80/path?query=val#fragment')", True),
        ("isURL('/absolute-path')", True),
        ("isURL('https://example.com/path')", True),
        ("isURL('relative-path')", False),
        ("isURL('')", False),
        ("isURL('https://ex ample.com/')", False),
        ("isURL('https://example.com:port/')", False),
        ("isURL('https://example.com/%zz')", False),
        ("isURL('mailto:someone@example.com')", True),
    ],
)
def test_url_library(expr: str, want: Any) -> None:
    assert run(expr) == celeval.to_cel(want)


@pytest.mark.parametrize(
    ("expr", "reason"),
    [
        ("url('relative')", 'parse "relative": invalid URI for request'),
        ("url('')", 'parse "": empty url'),
        ("url(':foo')", 'parse ":foo": missing protocol scheme'),
        ("url('https://example.com:x/')", 'parse "https://example.com:x/": invalid port ":x" after host'),
        ("url('https://example.com/%zz')", 'parse "https://example.com/%zz": invalid URL escape "%zz"'),
        ("url('https://ex ample.com/')", 'parse "https://ex ample.com/": invalid character " " in host name'),
        ("url('https://[::1/')", "parse \"https://[::1/\": missing ']' in host"),
    ],
)
def test_url_parse_errors_are_go_s(expr: str, reason: str) -> None:
    assert fails(expr) == f"URL parse error during conversion from string: {reason}"
    assert fails(f"{expr}.getHost()") == fails(expr)


IP_TRUE = [
    'ip("192.168.0.1") == ip("192.168.0.1")',
    'isIP("192.168.0.1")',
    '!isIP("192.168.0.1.0")',
    'ip.isCanonical("127.0.0.1")',
    'ip("192.168.0.1").family() == 4',
    'ip("0.0.0.0").isUnspecified()',
    '!ip("127.0.0.1").isUnspecified()',
    'ip("127.0.0.1").isLoopback()',
    '!ip("1.2.3.4").isLoopback()',
    'ip("224.0.0.1").isLinkLocalMulticast()',
    '!ip("224.0.1.1").isLinkLocalMulticast()',
    'ip("169.254.169.254").isLinkLocalUnicast()',
    '!ip("192.168.0.1").isLinkLocalUnicast()',
    'ip("192.168.0.1").isGlobalUnicast()',
    '!ip("255.255.255.255").isGlobalUnicast()',
    'ip("2001:db8::68") == ip("2001:0db8:0:0::68")',
    'isIP("2001:db8::68")',
    '!isIP("2001:db8:::68")',
    'ip.isCanonical("2001:db8::68")',
    '!ip.isCanonical("2001:DB8::68")',
    'ip("2001:db8::68").family() == 6',
    'ip("::").isUnspecified()',
    '!ip("::1").isUnspecified()',
    'ip("::1").isLoopback()',
    '!ip("2001:db8::abcd").isLoopback()',
    'ip("ff02::1").isLinkLocalMulticast()',
    '!ip("fd00::1").isLinkLocalMulticast()',
    'ip("fe80::1").isLinkLocalUnicast()',
    '!ip("fd80::1").isLinkLocalUnicast()',
    'ip("2001:db8::abcd").isGlobalUnicast()',
    '!ip("ff00::1").isGlobalUnicast()',
    'string(ip("192.168.0.1")) == "192.168.0.1"',
    'string(ip("2001:db8:0:0:1:0:0:1")) == "2001:db8::1:0:0:1"',
    '!isIP("1.2.3.04") && !isIP("fe80::1%eth0") && !isIP("::ffff:1.2.3.4")',
]
CIDR_TRUE = [
    'cidr("192.168.0.0/24") == cidr("192.168.0.0/24")',
    'cidr("192.168.0.0/24").containsIP(ip("192.168.0.1"))',
    '!cidr("192.168.0.0/24").containsIP(ip("192.168.1.1"))',
    'cidr("192.168.0.0/24").containsIP("192.168.0.1")',
    '!cidr("192.168.0.0/24").containsIP("192.168.1.1")',
    'cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.0/25"))',
    'cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.1/32"))',
    '!cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.0/23"))',
    '!cidr("192.168.0.0/24").containsCIDR(cidr("192.169.0.1/32"))',
    'cidr("192.168.0.0/24").containsCIDR("192.168.0.0/25")',
    '!cidr("192.168.0.0/24").containsCIDR("192.168.0.0/23")',
    'cidr("192.168.0.0/24").ip() == ip("192.168.0.0")',
    'cidr("192.168.0.1/24").ip() == ip("192.168.0.1")',
    'cidr("192.168.0.0/24").masked() == cidr("192.168.0.0/24")',
    'cidr("192.168.0.1/24").masked() == cidr("192.168.0.0/24")',
    'cidr("192.168.0.0/24").prefixLength() == 24',
    'cidr("2001:db8::/32").containsIP(ip("2001:db8::1"))',
    '!cidr("2001:db8::/32").containsIP(ip("2001:dc8::1"))',
    'cidr("2001:db8::/32").containsCIDR(cidr("2001:db8::/33"))',
    '!cidr("2001:db8::/32").containsCIDR("2001:db8::/31")',
    'cidr("2001:db8:1::/32").masked() == cidr("2001:db8::/32")',
    'string(cidr("192.168.0.0/24")) == "192.168.0.0/24"',
    '!cidr("10.0.0.0/8").containsIP("::1") && isCIDR("10.0.0.0/8") && !isCIDR("10.0.0.0")',
]
SEMVER_TRUE = [
    'semver("1.2.3") == semver("1.2.3")',
    'isSemver("1.2.3-beta.1+build.1")',
    '!isSemver("") && !isSemver("v1.0.0") && !isSemver(" 1.0.0") && !isSemver("1. 0.0")',
    '!isSemver("1.0.0 ") && !isSemver("01.01.01") && !isSemver("1") && !isSemver("1.1")',
    '!isSemver("", true) && !isSemver(" 1.0.0", true) && !isSemver("1. 0.0", true)',
    '!isSemver("1.0.0 ", true)',
    'isSemver("v1.0.0", true) && isSemver("01.01.01", true) && isSemver("1", true) && isSemver("1.1", true)',
    'semver("v01.01", true) == semver("1.1.0")',
    '!(semver("1.2.3") == semver("1.0.0"))',
    'semver("1.0.0").isLessThan(semver("1.2.3"))',
    '!semver("1.0.0").isLessThan(semver("1.0.0"))',
    'semver("1.2.3").isGreaterThan(semver("1.0.0"))',
    '!semver("1.0.0").isGreaterThan(semver("1.0.0"))',
    'semver("1.2.3").compareTo(semver("1.2.3")) == 0',
    'semver("1.0.0").compareTo(semver("1.2.3")) == -1',
    'semver("1.2.3").compareTo(semver("1.0.0")) == 1',
    'semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2 && semver("1.2.3").patch() == 3',
    # semver.org's precedence example, and build metadata ignored
    'semver("1.0.0-alpha").isLessThan(semver("1.0.0-alpha.1"))',
    'semver("1.0.0-alpha.1").isLessThan(semver("1.0.0-alpha.beta"))',
    'semver("1.0.0-beta.2").isLessThan(semver("1.0.0-beta.11"))',
    'semver("1.0.0-rc.1").isLessThan(semver("1.0.0"))',
    'semver("1.0.0+a") == semver("1.0.0+b")',
    # quantities and semvers share method names; the receiver chooses
    'quantity("1").compareTo(quantity("2")) == -1 && semver("2.0.0").compareTo(semver("1.0.0")) == 1',
]


@pytest.mark.parametrize("expr", IP_TRUE + CIDR_TRUE + SEMVER_TRUE)
def test_ip_cidr_and_semver_library_cases(expr: str) -> None:
    assert run(expr) == ct.BoolType(True)


NET = "network address parse error during conversion from string: "


@pytest.mark.parametrize(
    ("expr", "error"),
    [
        ('ip("192.168.0.1.0")', 'IP Address "192.168.0.1.0" parse error during conversion from string: '
         'ParseAddr("192.168.0.1.0"): IPv4 address too long'),
        ('ip.isCanonical("127.0.0.1.0")', 'IP Address "127.0.0.1.0" parse error during conversion from '
         'string: ParseAddr("127.0.0.1.0"): IPv4 address too long'),
        ('ip("2001:db8:::68")', 'IP Address "2001:db8:::68" parse error during conversion from string: '
         'ParseAddr("2001:db8:::68"): each colon-separated field must have at least one digit (at ":68")'),
        ('ip("1.2.3.04")', 'IP Address "1.2.3.04" parse error during conversion from string: '
         'ParseAddr("1.2.3.04"): IPv4 field has octet with leading zero'),
        ('ip("12345::")', 'IP Address "12345::" parse error during conversion from string: '
         'ParseAddr("12345::"): each group must have 4 or less digits (at "12345::")'),
        ('ip("1:2:3:4:5:6:7::8")', 'IP Address "1:2:3:4:5:6:7::8" parse error during conversion from '
         "string: ParseAddr(\"1:2:3:4:5:6:7::8\"): the :: must expand to at least one field of zeros"),
        ('ip("fe80::1%eth0")', 'IP address "fe80::1%eth0" with zone value is not allowed'),
        ('ip("::ffff:1.2.3.4")', 'IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed'),
        ('cidr("192.168.0.0/")', NET + NET + 'netip.ParsePrefix("192.168.0.0/"): bad bits after slash: ""'),
        ('cidr("2001:db8::/")', NET + NET + 'netip.ParsePrefix("2001:db8::/"): bad bits after slash: ""'),
        ('cidr("10.0.0.0")', NET + NET + "netip.ParsePrefix(\"10.0.0.0\"): no '/'"),
        ('cidr("10.0.0.0/33")', NET + NET + 'netip.ParsePrefix("10.0.0.0/33"): prefix length out of range'),
        ('cidr("10.0.0.0/8").containsCIDR("x/8")', NET + NET + 'netip.ParsePrefix("x/8"): '
         'ParseAddr("x"): unable to parse IP'),
        ('cidr("10.0.0.0/8").containsIP("x")', "no such overload"),
        ('semver("v1.0")', "No Major.Minor.Patch elements found"),
        ('semver("1.02.3")', 'Minor number must not contain leading zeroes "02"'),
        ('semver("1.2.3-")', "Prerelease is empty"),
        ('semver("1.2.3+a..b")', "Build meta data is empty"),
        ('semver("1.2", true).major() == 1 && semver("1-rc", true).major() == 1', "short version cannot "
         "contain PreRelease/Build meta data"),
        ('isSemver([1, 2, 3])', "no such overload"),
    ],
)  # fmt: skip
def test_ip_cidr_and_semver_library_errors(expr: str, error: str) -> None:
    assert fails(expr) == error


OPTIONALS_TRUE = [
    "optional.of(1).hasValue() && !optional.none().hasValue()",
    "optional.of(1).value() == 1",
    "optional.of(1).orValue(2) == 1 && optional.none().orValue(2) == 2",
    "optional.none().or(optional.of(3)).value() == 3 && optional.of(1).or(optional.of(3)).value() == 1",
    "optional.of(1) == optional.of(1) && optional.none() == optional.none()",
    "!(optional.of(1) == optional.none())",
    "!optional.ofNonZeroValue(0).hasValue() && !optional.ofNonZeroValue('').hasValue()",
    "!optional.ofNonZeroValue([]).hasValue() && optional.ofNonZeroValue('x').hasValue()",
]


@pytest.mark.parametrize("expr", OPTIONALS_TRUE)
def test_optional_values(expr: str) -> None:
    assert run(expr) == ct.BoolType(True)


def test_an_empty_optional_s_value_is_an_error() -> None:
    assert fails("optional.none().value()") == "optional.none() dereference"


def test_an_optional_old_self_rule_also_runs_on_create() -> None:
    """validation.go: a rule with `optionalOldSelf` runs where no old value exists, `oldSelf`
    then `optional.none()` (`validationActivationWithOldSelf`), else `optional.of(old)`; like
    any transition rule, it is never ratcheted."""
    rules = [
        {
            "rule": "oldSelf.hasValue() || self.n != 0",
            "message": "n may not start at 0",
            "optionalOldSelf": True,
        },
        {"rule": "self.n >= oldSelf.orValue(self).n", "message": "n may not shrink", "optionalOldSelf": True},
        {"rule": "self.n >= oldSelf.n", "message": "transition rule"},
    ]
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {"n": {"type": "integer"}},
                "x-kubernetes-validations": rules,
            }
        },
    }
    compiled = celrules.compile_schema(schema)
    assert compiled.skipped == []
    created = celeval.validate(compiled, {"spec": {"n": 0}}, None)
    assert [c.message for c in created] == ["Invalid value: n may not start at 0"]
    assert celeval.validate(compiled, {"spec": {"n": 1}}, None) == []
    shrunk = celeval.validate(compiled, {"spec": {"n": 0}}, {"spec": {"n": 2}})
    assert [c.message for c in shrunk] == [
        "Invalid value: n may not shrink",
        "Invalid value: transition rule",
    ]
    unchanged = celeval.validate(compiled, {"spec": {"n": 0}}, {"spec": {"n": 0}})
    assert unchanged == []


LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
NAME_PART_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@pytest.mark.parametrize(
    ("expr", "problems"),
    [
        ('format.dns1123Label().validate("my-label-name")', None),
        ('format.dns1123Subdomain().validate("apiextensions.k8s.io")', None),
        ('format.qualifiedName().validate("apiextensions.k8s.io/v1beta1")', None),
        ('format.dns1123LabelPrefix().validate("my-label-prefix-")', None),
        ('format.dns1123SubdomainPrefix().validate("mysubdomain.prefix.-")', None),
        ('format.dns1035LabelPrefix().validate("my-label-prefix-")', None),
        ('format.uri().validate("http://example.com")', None),
        ('format.uuid().validate("123e4567-e89b-12d3-a456-426614174000")', None),
        ('format.byte().validate("aGVsbG8=")', None),
        ('format.date().validate("2021-01-01")', None),
        ('format.dns1123Label().validate("contains a space")', [LABEL_MSG]),
        ('format.dns1123Subdomain().validate("contains a space")', [SUBDOMAIN_MSG]),
        ('format.dns1035Label().validate("contains a space")', [DNS1035_MSG]),
        ('format.qualifiedName().validate("contains a space")', [NAME_PART_MSG]),
        ('format.dns1123LabelPrefix().validate("contains a space-")', [LABEL_MSG]),
        ('format.dns1123SubdomainPrefix().validate("contains a space-")', [SUBDOMAIN_MSG]),
        ('format.dns1035LabelPrefix().validate("contains a space-")', [DNS1035_MSG]),
        ('format.dns1123Label().validate("a.b")', ["must not contain dots"]),
        ('format.labelValue().validate("my-cool-label-Value")', None),
        ('format.byte().validate("aGVsbG8")', ["invalid base64"]),
        ('format.date().validate("2020-01-32")', ["invalid date"]),
        ('format.uuid().validate("x")', ["does not match the UUID format"]),
        ('format.uri().validate("relative")', ['parse "relative": invalid URI for request']),
    ],
)
def test_format_library_cases(expr: str, problems: list[str] | None) -> None:
    found = run(f"{expr}.hasValue() ? {expr}.value() : []")
    assert found == celeval.to_cel(problems or [])
    assert run(f"{expr}.hasValue()") == ct.BoolType(problems is not None)


def test_format_names_and_datetime_are_not_evaluated_and_string_format_stays_skipped() -> None:
    for expr in ('format.named("uuid").hasValue()', 'format.datetime().validate("x")', "'%s'.format(['x'])"):
        with pytest.raises(ValueError, match="unsupported"):
            celrules._program(expr)
