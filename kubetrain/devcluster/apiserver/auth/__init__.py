"""Who a request is and what it may do: authentication (authn.py), bound ServiceAccount tokens
(tokens.py), RBAC authorization (rbac.py), impersonation (impersonation.py), and TokenReview
and SubjectAccessReview (accessreviews.py)."""
