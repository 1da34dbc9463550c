import pytest, requests
pytestmark = pytest.mark.django_db(transaction=True)
def test_probe(service):
    r = requests.post(service.url + "/sandbox/oauth2/v1/token", data={"grant_type": "client_credentials", "client_id": "sandbox-partner-client", "client_secret": "sandbox-partner-client-secret"}, timeout=10)
    t = r.json()["access_token"]
    r = requests.get(service.url + "/sandbox/partner/v2/products", headers={"Authorization": "Bearer " + t}, timeout=10)
    print(r.status_code)
